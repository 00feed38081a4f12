# The workspace holds .pth files where an interpreter whose HOME is the
# workspace would run them at start-up (user site-packages) and in its root;
# start Python as a test runner would and see whether one ran.
python3 -c 'import site; print("user site", site.USER_SITE)'
if [ -e pth-ran ]; then echo "PTH RAN from $(cat pth-ran)"; else echo "no .pth ran"; fi
