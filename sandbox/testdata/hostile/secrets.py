# Prints every environment variable it can find: its own and those of
# every process it can see.
import glob, json

found = {"self": dict(__import__("os").environ), "proc": []}
for p in glob.glob("/proc/*/environ"):
    try:
        with open(p, "rb") as f:
            found["proc"].append(f.read().decode("latin-1"))
    except OSError:
        pass
print(json.dumps(found))
