# The tests' side: a stand-in for the candidate's module. Every function
# call crosses to the candidate's process as plain data; no code of the
# candidate runs in this process.
import builtins as _builtins
import threading as _threading


class _CandidateError(Exception):
    """The candidate raised an exception that is not a builtin one."""


class _JudgeError(BaseException):
    """No answer came from the candidate: it crashed, ran out of time, or
    its value could not cross. A BaseException, so that a test's
    `except Exception` or pytest.raises(Exception) cannot pass on it."""


_CandidateError.__qualname__ = _CandidateError.__name__ = "CandidateError"
_JudgeError.__qualname__ = _JudgeError.__name__ = "JudgeError"
_CandidateError.__module__ = _JudgeError.__module__ = "ratchet.judge"
_FD = 3
_LOCK = _threading.Lock()  # one call on the wire at a time, whichever thread makes it


def _call(name, args, kwargs):
    try:
        req = {"op": "call", "name": name, "args": _enc(list(args)), "kwargs": _enc(kwargs)}
        with _LOCK:
            _send(_FD, req)
            r = _recv(_FD)
    except _Uncrossable as e:
        raise _JudgeError("an argument of %s() cannot cross to the candidate's process: %s" % (name, e)) from None
    if "ok" in r:
        return _dec(r["ok"])
    if "exc" in r:
        e = r["exc"]
        cls = getattr(_builtins, e["type"], None) if e["builtin"] else None
        if isinstance(cls, type) and issubclass(cls, Exception):
            try:
                err = cls(e["msg"])
            except Exception:
                err = None
            if err is not None:
                raise err from None
        raise _CandidateError("%s: %s" % (e["type"], e["msg"])) from None
    raise _JudgeError(r["judge_error"]) from None


def _function(name):
    def f(*args, **kwargs):
        return _call(name, args, kwargs)

    f.__name__ = f.__qualname__ = name
    f.__module__ = _MODULE
    return f


def _class(name):
    def f(*args, **kwargs):
        raise _JudgeError("%s is a class: its instances cannot cross to the tests (use isolation: in-process)" % name)

    f.__name__ = f.__qualname__ = name
    return f


def _failed(name, error):
    def f(*args, **kwargs):
        raise _CandidateError("the candidate's module failed to import:\n" + error)

    f.__name__ = f.__qualname__ = name
    return f


# What the stand-in module binds: run in a namespace of its own, so that a
# candidate's function named like a builtin (len, say) cannot replace what
# this code calls.
_exports, _all, _getattr = {}, [], None
_send(_FD, {"op": "hello"})
_hello = _recv(_FD)
if "judge_error" in _hello:
    _hello = {"error": _hello["judge_error"]}
if "error" in _hello:

    def _getattr(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _failed(name, _hello["error"])

else:
    for _n in _hello["functions"]:
        _exports[_n] = _function(_n)
    for _n in _hello["classes"]:
        _exports[_n] = _class(_n)
    for _n, _v in _hello["constants"]:
        _exports[_n] = _dec(_v)
    # `import *` never rebinds a builtin's name in a test module.
    _all = [_n for _n in _exports if not hasattr(_builtins, _n)]
