# The tests of seed 000's task. They are mounted read-only into the sandbox
# and hashed before and after each run: a candidate cannot edit them.
from is_prime import is_prime


def test_small_primes():
    assert is_prime(2) and is_prime(3) and is_prime(13)


def test_non_primes():
    assert not is_prime(0) and not is_prime(1) and not is_prime(9)


def test_negatives():
    assert not is_prime(-7)


def test_large_prime():
    assert is_prime(7919)
