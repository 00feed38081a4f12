# A right solution whose atexit hook replaces pytest's report with a
# symbolic link to TARGET (the host would read /dev/zero forever, hang on
# its own stdin, or read a host file).
import atexit
import os
import sys

TARGET = "/dev/zero"
path = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))


def link():
    os.remove(path)
    os.symlink(TARGET, path)


atexit.register(link)


def add(a, b):
    return a + b
