module weave.test/spawn

go 1.19
