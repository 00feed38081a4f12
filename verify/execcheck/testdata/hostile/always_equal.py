# A wrong solution that returns a value equal to everything: models are
# documented doing exactly this to pass tests.
class Anything(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def add(a, b):
    return Anything(0)
