module symm.dev/symm

go 1.19
