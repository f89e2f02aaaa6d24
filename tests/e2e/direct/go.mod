module weave.test/direct

go 1.19
