module weave.test/cgo

go 1.19
