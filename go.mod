module github.com/hexstate/hexstate

go 1.25.0

require (
	github.com/holiman/uint256 v1.3.2
	github.com/linxGnu/grocksdb v1.7.14
	golang.org/x/crypto v0.55.0
)

require golang.org/x/sys v0.47.0 // indirect
