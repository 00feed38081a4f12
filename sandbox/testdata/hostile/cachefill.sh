# Fills the cache directory (shared by every run) with 4 MiB files until
# writes fail.
i=0
while head -c 4194304 /dev/zero > "$CACHE/fill$i" 2>/dev/null; do i=$((i+1)); done
echo "cache files: $i"
