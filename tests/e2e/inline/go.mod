module weave.test/inline

go 1.19
