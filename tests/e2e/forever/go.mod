module forever

go 1.19
