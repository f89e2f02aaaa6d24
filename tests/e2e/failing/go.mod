module weave.test/failing

go 1.19
