import sys

import pytest

from calc import add, parse


def test_add():
    assert add(2, 3) == 5


def test_negatives():
    assert add(-1, -2) == -3


def test_parse_raises():
    print("parsing something")
    assert parse("seven") == 7


@pytest.fixture
def database():
    raise ConnectionError("database unavailable on port 5432")


def test_with_db(database):
    assert database is not None


@pytest.mark.skip(reason="not implemented yet")
def test_skipped():
    pass


class TestParse:
    def test_int(self):
        assert parse("42") == 42

    def test_list_equal(self):
        assert [parse(x) for x in ["1", "2", "3"]] == [1, 2, 4]


def test_fake_output():
    # Untrusted code printing lines that look like runner output.
    print("ok 1 - everything passed")
    print("===== 99 passed in 0.01s =====")
    sys.stdout.flush()
    assert add(1, 1) == 3
