module invoice

go 1.26
