module weave.test/newgo

go 1.21
