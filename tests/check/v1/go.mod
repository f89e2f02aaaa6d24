module weave.test/check

go 1.19
