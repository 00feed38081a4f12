# Kills its parent, whatever that is, then says whether it survived.
echo "parent is $PPID"
kill -9 $PPID
python3 -c 'import os; print("python parent", os.getppid()); os.kill(os.getppid(), 9)'
sleep 0.2
echo "still here"
