module pagefault

go 1.19
