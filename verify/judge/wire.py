# ratchet's judge wire, shared by the candidate's server and the tests' proxy.
# Only plain data crosses: None, bool, int, float, str, list, and tagged
# tuples, sets, frozensets, bytes, dicts and non-finite floats; the other
# side builds them as builtin values.
# A frame is a 4-byte big-endian length and that many bytes of JSON.
import base64 as _b64
import json as _json
import math as _math
import os as _os

_MAX_FRAME = 1 << 20
_MAX_DEPTH = 100


class _Uncrossable(Exception):
    pass


def _enc(v, depth=0):
    # A subclass crosses as its base type's value (JSON writes an int
    # subclass with int.__repr__, a str subclass as its characters), so
    # its own __eq__ stays behind.
    if depth > _MAX_DEPTH:
        raise _Uncrossable("a value nested more than %d deep" % _MAX_DEPTH)
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        try:
            int.__repr__(v)
        except ValueError:
            raise _Uncrossable("an int too large to write out")
        return v
    if isinstance(v, float):
        if _math.isfinite(v):
            return v
        return {"$float": "nan" if v != v else ("inf" if v > 0 else "-inf")}
    d = depth + 1
    if isinstance(v, list):
        return [_enc(x, d) for x in v]
    if isinstance(v, tuple):
        return {"$tuple": [_enc(x, d) for x in v]}
    if isinstance(v, frozenset):
        return {"$frozenset": [_enc(x, d) for x in v]}
    if isinstance(v, set):
        return {"$set": [_enc(x, d) for x in v]}
    if isinstance(v, bytes):
        return {"$bytes": _b64.b64encode(v).decode("ascii")}
    if isinstance(v, dict):
        return {"$dict": [[_enc(k, d), _enc(x, d)] for k, x in v.items()]}
    t = type(v)
    raise _Uncrossable("a value of type %s.%s" % (t.__module__, t.__qualname__))


_FLOATS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _dec(v):
    if type(v) is list:
        return [_dec(x) for x in v]
    if type(v) is not dict:
        return v
    ((tag, x),) = v.items()
    if tag == "$tuple":
        return tuple(_dec(y) for y in x)
    if tag == "$set":
        return {_dec(y) for y in x}
    if tag == "$frozenset":
        return frozenset(_dec(y) for y in x)
    if tag == "$bytes":
        return _b64.b64decode(x, validate=True)
    if tag == "$dict":
        return {_dec(k): _dec(y) for k, y in x}
    if tag == "$float":
        return _FLOATS[x]
    raise ValueError("unknown tag " + tag)


def _send(fd, obj):
    data = _json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    if len(data) > _MAX_FRAME:
        raise _Uncrossable("more than %d bytes of data" % _MAX_FRAME)
    data = len(data).to_bytes(4, "big") + data
    while data:
        data = data[_os.write(fd, data):]


def _read(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = _os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _recv(fd):
    n = int.from_bytes(_read(fd, 4), "big")
    if n > _MAX_FRAME:
        raise ValueError("frame of %d bytes" % n)
    return _json.loads(_read(fd, n))
