# Busy loop, forever.
while True:
    pass
