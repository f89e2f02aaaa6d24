module initinline

go 1.19
