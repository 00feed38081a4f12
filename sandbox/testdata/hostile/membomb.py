# Memory bomb: allocates (and touches) 64 MiB chunks until it cannot.
chunks = []
try:
    while True:
        chunks.append(bytearray(64 << 20))
except MemoryError:
    print("MemoryError after %d MiB" % (64 * len(chunks)), flush=True)
    raise
