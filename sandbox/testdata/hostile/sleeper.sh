# Does nothing, forever.
exec sleep 100000
