from is_prime import is_prime


def test_small_primes():
    assert is_prime(2) and is_prime(3) and is_prime(13)


def test_non_primes():
    assert not is_prime(0) and not is_prime(1) and not is_prime(9)


def test_negatives():
    assert not is_prime(-7)


def test_large_prime():
    assert is_prime(7919)
