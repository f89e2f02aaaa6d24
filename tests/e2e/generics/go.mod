module weave.test/generics

go 1.19
