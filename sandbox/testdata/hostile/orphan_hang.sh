# Same orphan, but the parent hangs too: the wall timeout has to kill both.
setsid sh -c 'while :; do date +%s%N > marker; sleep 0.02; done' </dev/null >/dev/null 2>&1 &
while [ ! -s marker ]; do sleep 0.01; done
echo "orphan started"
exec sleep 100000
