from add import add


def test_small():
    assert add(2, 3) == 5


def test_negative():
    assert add(-2, 2) == 0
