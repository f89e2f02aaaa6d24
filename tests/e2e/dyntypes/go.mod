module weave.test/dyntypes

go 1.19
