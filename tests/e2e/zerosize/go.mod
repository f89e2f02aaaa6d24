module weave.test/zerosize

go 1.19
