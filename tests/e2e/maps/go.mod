module weave.test/maps

go 1.19
