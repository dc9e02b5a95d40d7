module sample

go 1.19
