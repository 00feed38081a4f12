# ratchet's pytest launcher, mounted read-only beside the tests and run as
# `python3 -E -s -P <this file> ARGS...` in place of `python3 -m pytest
# ARGS...`. The workspace goes at the end of sys.path, after the standard
# library, so no module of the candidate's stands in for one of it while
# pytest starts; and each test's outcome is written to file descriptor 3
# the moment it is known, so that a report rewritten after the run (by an
# atexit handler, or a process left behind) disagrees with what ratchet
# saw and is tampered.
import json
import os
import sys

sys.path.append(os.getcwd())

import pytest  # noqa: E402


class _Outcomes:
    def _write(self, report, when):
        line = json.dumps({"id": report.nodeid, "when": when, "outcome": report.outcome}) + "\n"
        os.write(3, line.encode("utf-8", "replace"))

    def pytest_runtest_logreport(self, report):
        self._write(report, report.when)

    def pytest_collectreport(self, report):
        if report.failed:
            self._write(report, "collect")


sys.exit(pytest.main(sys.argv[1:], plugins=[_Outcomes()]))
