module weave.test/lines

go 1.19
