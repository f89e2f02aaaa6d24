module weave.test/typedesc

go 1.19
