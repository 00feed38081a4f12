# Tries to write outside its workspace: the host's /tmp, the host's $HOME,
# the workspace's parent, /etc, and the mounted test file.
import os

targets = [
    os.environ["PWNED_TMP"],
    os.environ["PWNED_HOME"],
    os.path.join(os.path.dirname(os.getcwd()), "pwned"),
    "/etc/pwned",
    "tests/test_sample.py",
]
for t in targets:
    try:
        with open(t, "a") as f:
            f.write("\ndef test_pwned():\n    pass\n")
        print("WROTE", t)
    except OSError as e:
        print("denied", t, e.__class__.__name__, e.errno)
