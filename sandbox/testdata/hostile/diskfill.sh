# Fills the workspace, HOME and /tmp with 8 MiB files until writes fail.
i=0
while head -c 8388608 /dev/zero > "fill$i" 2>/dev/null; do i=$((i+1)); done
j=0
while head -c 8388608 /dev/zero > "$HOME/fill$j" 2>/dev/null; do j=$((j+1)); done
echo "workspace files: $i, home files: $j"
df -k . | tail -1
