module weave.bench/workload

go 1.19
