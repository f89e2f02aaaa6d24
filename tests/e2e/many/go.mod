module weave.bench/many

go 1.19
