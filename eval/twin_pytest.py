# Derives the impossible twin of a pytest file (see eval/impossible.go): the
# first assertion, in source order, that compares with == against a literal
# number, string or bool gets another literal. Only that literal's text
# changes; the rest of the file stays byte for byte. Reads the file argv[1],
# writes the twin to argv[2], prints what changed as JSON, or {} when no
# assertion qualifies.
import ast
import json
import sys


def other(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + " (contradicted)"
    return None


def main():
    src = open(sys.argv[1], "rb").read()
    found = []
    for node in ast.walk(ast.parse(src)):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        cmp = node.test
        if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], ast.Eq):
            continue
        for lit in (cmp.comparators[0], cmp.left):
            if isinstance(lit, ast.Constant) and lit.lineno == lit.end_lineno and other(lit.value) is not None:
                found.append((lit.lineno, lit.col_offset, lit, node))
                break
    if not found:
        print("{}")
        return
    _, _, lit, node = min(found, key=lambda f: (f[0], f[1]))
    lines = src.splitlines(keepends=True)
    line = lines[lit.lineno - 1]  # offsets are in bytes of the UTF-8 line
    now = repr(other(lit.value))
    lines[lit.lineno - 1] = line[: lit.col_offset] + now.encode() + line[lit.end_col_offset :]
    open(sys.argv[2], "wb").write(b"".join(lines))
    assertion = b"".join(src.splitlines(keepends=True)[node.lineno - 1 : node.end_lineno]).decode().strip()
    print(json.dumps({"line": lit.lineno, "assertion": assertion, "was": repr(lit.value), "now": now}))


main()
