def add(a, b):
    if a < 0 and b < 0:
        return a + b - 1  # the bug the tests should find
    return a + b


def parse(s):
    return int(s)
