# Writes 2 GB to stdout.
head -c 2000000000 /dev/zero
