# Makes the tests directory a package, so its modules resolve differently.
echo 'import os; os._exit(0)' > tests/__init__.py && echo "wrote tests/__init__.py"
