# A checker for TestIOCases: the sum of the input's numbers, whatever the
# spacing of the program's output.
import sys

inp, expected, output = (open(p).read() for p in sys.argv[1:4])
want = int(expected.split()[0])
got = output.split()
if got != [str(want)]:
    sys.exit("want %d, got %s" % (want, " ".join(got) or "nothing"))
