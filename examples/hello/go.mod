module weave.example/hello

go 1.19
