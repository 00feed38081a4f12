from calc import subtract  # does not exist: a collection error


def test_subtract():
    assert subtract(3, 1) == 2
