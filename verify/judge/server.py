# The candidate's side: import the candidate module, say what it defines,
# then answer calls until the judge hangs up. This process holds nothing
# of the tests; whatever it sends is checked by the judge. Started ahead
# of its candidate, it waits for one byte at descriptor gate first, which
# comes once the candidate's module is in the workspace (end of file: no
# candidate came).
def _serve(module, fd=3, gate=None):
    import builtins
    import importlib
    import inspect
    import sys
    import traceback

    sys.dont_write_bytecode = True
    if gate is not None:
        if not _os.read(gate, 1):
            return
        _os.close(gate)
    try:
        mod = importlib.import_module(module)
    except BaseException:
        _send(fd, {"hello": {"error": traceback.format_exc(limit=-8)[-4000:]}})
        return
    functions, classes, constants = [], [], []
    for name, v in list(vars(mod).items()):
        if name.startswith("_") or not name.isidentifier() or inspect.ismodule(v):
            continue
        if inspect.isclass(v):
            classes.append(name)
        elif callable(v):
            functions.append(name)
        else:
            try:
                constants.append([name, _enc(v)])
            except _Uncrossable:
                pass
    try:
        _send(fd, {"hello": {"functions": functions, "classes": classes, "constants": constants}})
    except _Uncrossable:
        _send(fd, {"hello": {"functions": functions, "classes": classes, "constants": []}})
    while True:
        try:
            req = _recv(fd)
        except EOFError:
            return
        try:
            fn = getattr(mod, req["name"])
            out = {"ok": _enc(fn(*_dec(req["args"]), **_dec(req["kwargs"])))}
        except _Uncrossable as e:
            out = {"uncrossable": "returned " + str(e)}
        except BaseException as e:
            t = type(e)
            try:
                msg = str(e)[:4000]
            except BaseException:
                msg = "(its message could not be printed)"
            builtin = getattr(builtins, t.__name__, None) is t
            out = {"exc": {"type": t.__name__ if builtin else t.__qualname__, "builtin": builtin, "msg": msg}}
        _send(fd, out)
