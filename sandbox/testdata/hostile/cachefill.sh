# Fills the cache directory (a host directory that outlives the run) with
# 4 MiB files, forever.
i=0
while :; do head -c 4194304 /dev/zero > "$CACHE/fill$i"; i=$((i+1)); done
