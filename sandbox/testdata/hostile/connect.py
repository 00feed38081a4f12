# Connects to a listener on the host's loopback interface.
import os, socket, sys

port = int(os.environ["TARGET_PORT"])
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(b"exfiltrated")
    print("connected")
except OSError as e:
    print("connect failed:", e)
    sys.exit(3)
