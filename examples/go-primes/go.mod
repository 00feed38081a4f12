module primes

go 1.26
