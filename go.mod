module github.com/memgate/memgate

go 1.26.8
