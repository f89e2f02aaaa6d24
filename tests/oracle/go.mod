module weave.test/oracle

go 1.19
