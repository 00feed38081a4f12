# Replaces the report the host will read with something that is not a file
# the test runner wrote: $1 says what.
case "$1" in
zero) ln -s /dev/zero "$REPORT" ;;
stdin) ln -s /proc/self/fd/0 "$REPORT" ;;
host) ln -s /etc/shadow "$REPORT" ;;
fifo) mkfifo "$REPORT" ;;
hardlink) echo "<testsuites/>" > "$REPORT.orig" && ln "$REPORT.orig" "$REPORT" ;;
huge) head -c 40000000 /dev/zero > "$REPORT" ;;
esac
echo "planted $1: $(ls -l "$REPORT" 2>&1)"
