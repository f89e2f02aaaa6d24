module weave.test/pclninline

go 1.19
