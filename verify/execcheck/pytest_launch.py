# ratchet's pytest launcher, mounted read-only beside the tests and run as
# `python3 -E -s -P <this file> OUT GATE ARGS...` in place of `python3 -m
# pytest ARGS...`. The workspace goes at the end of sys.path, after the
# standard library, so no module of the candidate's stands in for one of
# it while pytest starts; and each test's outcome is written to file
# descriptor OUT the moment it is known, so that a report rewritten after
# the run (by an atexit handler, or a process left behind) disagrees with
# what ratchet saw and is tampered.
#
# GATE, unless it is "-", is the descriptor of a run started ahead of its
# candidate: pytest and its plugins are imported first, while the
# workspace holds only the tests, and the tests run once ratchet has
# written the candidate's files and sent one byte there (end of file: no
# candidate came, exit).
import atexit
import json
import os
import sys

_out = int(sys.argv[1])
_gate = sys.argv[2]
del sys.argv[1:3]
sys.path.append(os.getcwd())

import pytest  # noqa: E402


class _Outcomes:
    def _write(self, report, when):
        line = json.dumps({"id": report.nodeid, "when": when, "outcome": report.outcome}) + "\n"
        os.write(_out, line.encode("utf-8", "replace"))

    def pytest_runtest_logreport(self, report):
        self._write(report, report.when)

    def pytest_collectreport(self, report):
        if report.failed:
            self._write(report, "collect")


_args, _plugins = sys.argv[1:], [_Outcomes()]
if _gate != "-":
    # pytest.main's first step, get_config, reads nothing of the
    # workspace: it makes the plugin manager and imports and registers
    # pytest's own plugins. Made ahead, it is what pytest.main gets.
    import _pytest.config

    _get_config = _pytest.config.get_config
    _ready = _get_config(_args, _plugins)

    def _prepared(args=None, plugins=None):
        _pytest.config.get_config = _get_config
        return _ready

    _pytest.config.get_config = _prepared
    try:
        # The report's escaping compiles a large regular expression at its
        # first use: compiled now, it is in re's cache for the run.
        import _pytest.junitxml

        _pytest.junitxml.bin_xml_escape("")
    except Exception:  # a pytest without it: only a warm-up missed
        pass
    if not os.read(int(_gate), 1):
        os._exit(0)
    os.close(int(_gate))

_code = pytest.main(_args, plugins=_plugins)
# An interpreter's exit after its exit handlers, tearing down every module
# pytest loaded, takes longer than the tests: run the handlers (whatever
# they do is still judged), flush, and end the process.
atexit._run_exitfuncs()
sys.stdout.flush()
sys.stderr.flush()
os._exit(int(_code))
