# Plants bytecode for the mounted test module where pytest looks for its
# cache.
import os

try:
    os.makedirs("tests/__pycache__", exist_ok=True)
    with open("tests/__pycache__/test_sample.cpython-311-pytest-7.2.1.pyc", "wb") as f:
        f.write(b"\x00" * 16)
    print("planted")
except OSError as e:
    print("refused", e.__class__.__name__)
