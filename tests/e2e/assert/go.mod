module weave.test/assert

go 1.19
