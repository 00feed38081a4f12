# Mutants of a Python file at the syntax-tree level, for ratchet's check
# strength measurement. Reads the source on stdin and writes one JSON object
# to stdout: {"mutants": [...], "stillborn": n, "duplicates": n} or
# {"error": "..."}. It only parses and compiles the source, never runs it.
#
# Each mutant replaces one node's source span with the unparsed mutated
# node, so the rest of the file keeps its formatting; the result is parsed
# back and must give the intended tree (else parentheses are added, else the
# mutant is dropped). Bytecode identical to the original's marks a mutant
# equivalent; a mutant whose bytecode equals an earlier one's is a duplicate.
import ast
import dis
import json
import sys
import types

CMP = {
    ast.Lt: [ast.LtE, ast.GtE], ast.LtE: [ast.Lt, ast.Gt],
    ast.Gt: [ast.GtE, ast.LtE], ast.GtE: [ast.Gt, ast.Lt],
    ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq],
    ast.In: [ast.NotIn], ast.NotIn: [ast.In],
    ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
}
ARITH = {
    ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div],
    ast.Div: [ast.Mult], ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv],
    ast.Pow: [ast.Mult], ast.LShift: [ast.RShift], ast.RShift: [ast.LShift],
    ast.BitAnd: [ast.BitOr], ast.BitOr: [ast.BitAnd], ast.BitXor: [ast.BitAnd],
}
BOOL = {ast.And: ast.Or, ast.Or: ast.And}
SYM = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
    ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
    ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.And: "and", ast.Or: "or",
}
KEEP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
        ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Pass)


def code_sig(co):
    """What the code does, without line numbers or constants it never loads."""
    ops = tuple((i.opname, code_sig(i.argval) if isinstance(i.argval, types.CodeType)
                 else (type(i.argval).__name__, repr(i.argval)))
                for i in dis.get_instructions(co))
    return (ops, co.co_varnames, co.co_freevars, co.co_cellvars, co.co_name,
            getattr(co, "co_exceptiontable", b""))


def children(node):
    """(field, index or None, child) for every AST child of node."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield field, None, value
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, ast.AST):
                    yield field, i, v


def put(parent, field, index, new):
    """Sets the child and returns the old one."""
    if index is None:
        old = getattr(parent, field)
        setattr(parent, field, new)
    else:
        lst = getattr(parent, field)
        old = lst[index]
        lst[index] = new
    return old


def is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def proposals(node):
    """(kind, description, replacement) for node; replacement None = pass."""
    out = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for new in CMP.get(type(op), []):
                ops = list(node.ops)
                ops[i] = new()
                out.append(("comparison", "%s → %s" % (SYM[type(op)], SYM[new]),
                            ast.Compare(left=node.left, ops=ops, comparators=node.comparators)))
    elif isinstance(node, ast.BinOp):
        for new in ARITH.get(type(node.op), []):
            out.append(("arithmetic", "%s → %s" % (SYM[type(node.op)], SYM[new]),
                        ast.BinOp(left=node.left, op=new(), right=node.right)))
    elif isinstance(node, ast.AugAssign):
        for new in ARITH.get(type(node.op), []):
            out.append(("arithmetic", "%s= → %s=" % (SYM[type(node.op)], SYM[new]),
                        ast.AugAssign(target=node.target, op=new(), value=node.value)))
    elif isinstance(node, ast.BoolOp):
        new = BOOL[type(node.op)]
        out.append(("boolean", "%s → %s" % (SYM[type(node.op)], SYM[new]),
                    ast.BoolOp(op=new(), values=node.values)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("boolean", "not x → x", node.operand))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        out.append(("arithmetic", "-x → x", node.operand))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("constant", "%s → %s" % (node.value, not node.value),
                    ast.Constant(value=not node.value, kind=None)))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        for d in (1, -1):
            v = node.value + d
            # a negative literal is a unary minus on a positive one
            new = ast.Constant(value=v, kind=None) if v >= 0 else ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-v, kind=None))
            out.append(("constant", "%d → %d" % (node.value, v), new))
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
        elts = node.value.elts
        for i in range(len(elts) - 1):
            swapped = list(elts)
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            out.append(("swap", "return values %d and %d swapped" % (i + 1, i + 2),
                        ast.Return(value=ast.Tuple(elts=swapped, ctx=ast.Load()))))
    return out


def main():
    src = sys.stdin.read()
    try:
        tree = ast.parse(src)
        ref_sig = code_sig(compile(tree, "<reference>", "exec"))
    except (SyntaxError, ValueError, RecursionError) as e:
        json.dump({"error": "the reference does not parse: %s" % e}, sys.stdout)
        return
    data = src.encode()
    starts = [0]
    for i, b in enumerate(data):
        if b == 0x0A:
            starts.append(i + 1)

    def span(node):
        return (starts[node.lineno - 1] + node.col_offset,
                starts[node.end_lineno - 1] + node.end_col_offset)

    want_dump = None
    mutants, stillborn, duplicates = [], 0, 0
    seen = {ref_sig}

    def emit(parent, field, index, node, kind, desc, new):
        nonlocal stillborn, duplicates
        stmt = isinstance(node, ast.stmt)
        old = put(parent, field, index, new if new is not None else ast.Pass())
        try:
            want = ast.dump(tree)
        finally:
            put(parent, field, index, old)
        lo, hi = span(node)
        text = "pass" if new is None else ast.unparse(new)
        for attempt in (text, "(" + text + ")") if not stmt else (text,):
            mutated = (data[:lo] + attempt.encode() + data[hi:]).decode()
            try:
                got = ast.parse(mutated)
            except SyntaxError:
                continue
            if ast.dump(got) == want:
                break
        else:
            stillborn += 1
            return
        try:
            sig = code_sig(compile(got, "<reference>", "exec"))
        except (SyntaxError, ValueError, RecursionError):
            stillborn += 1
            return
        equivalent = sig == ref_sig
        if not equivalent and sig in seen:
            duplicates += 1
            return
        seen.add(sig)
        mutants.append({"line": node.lineno, "kind": kind, "description": desc,
                        "source": mutated, "equivalent": equivalent})

    def visit(node, in_fstring):
        for field, index, child in children(node):
            skip = in_fstring or isinstance(child, ast.JoinedStr)
            if not skip and hasattr(child, "lineno"):
                for kind, desc, new in proposals(child):
                    emit(node, field, index, child, kind, desc, new)
                if isinstance(child, (ast.If, ast.While, ast.IfExp)) and not (
                        isinstance(child.test, ast.UnaryOp) and isinstance(child.test.op, ast.Not)):
                    neg = type(child)(**dict(ast.iter_fields(child)))
                    neg.test = ast.UnaryOp(op=ast.Not(), operand=child.test)
                    # only the test's span changes
                    emit(child, "test", None, child.test, "negation", "condition negated", neg.test)
                if isinstance(child, ast.stmt) and index is not None and not isinstance(child, KEEP) and not is_docstring(child):
                    emit(node, field, index, child, "removal", "statement removed", None)
            visit(child, skip)

    sys.setrecursionlimit(10000)
    try:
        visit(tree, False)
    except RecursionError:
        json.dump({"error": "the reference is nested too deeply to mutate"}, sys.stdout)
        return
    json.dump({"mutants": mutants, "stillborn": stillborn, "duplicates": duplicates}, sys.stdout)


main()
