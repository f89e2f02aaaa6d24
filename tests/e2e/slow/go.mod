module weave.test/slow

go 1.19
