# A wrong solution that registers a pytest plugin at import which passes
# only the tests of the file it was shown (test_calc.py) and leaves every
# other test, the sentinel among them, as it is: the sentinel still fails,
# pytest exits 1, and the report agrees with the exit status.
import gc

import pytest
from _pytest.config import Config


class Flip:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if item.nodeid.startswith("test_calc.py::"):
            rep.outcome = "passed"
            rep.longrepr = None


for o in gc.get_objects():
    if isinstance(o, Config):
        o.pluginmanager.register(Flip(), "flip")


def add(a, b):
    return 0
