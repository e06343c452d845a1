module github.com/hexstate/hexstate

go 1.25.0
