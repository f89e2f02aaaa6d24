module weave.test/paths

go 1.19
