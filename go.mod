module github.com/seqsvr/seqsvr

go 1.26.8

require (
	connectrpc.com/connect v1.21.1
	google.golang.org/protobuf v1.36.12
)
