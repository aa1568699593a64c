module example.com/fixdemo

go 1.22
