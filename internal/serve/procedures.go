package serve

import (
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/seqsvr/seqsvr/internal/routes"
)

// procedureNames are the procedures a process serves: its table's and the
// health and reflection services NewHandler mounts. Per-RPC metrics name
// these and count any other path as unknown, so a caller cannot make a
// series with a path of its own.
func procedureNames(t routes.Table) []string {
	names := []string{
		"/" + grpchealth.HealthV1ServiceName + "/Check",
		"/" + grpchealth.HealthV1ServiceName + "/Watch",
		"/" + grpcreflect.ReflectV1ServiceName + "/ServerReflectionInfo",
		"/" + grpcreflect.ReflectV1AlphaServiceName + "/ServerReflectionInfo",
	}
	for _, p := range t.Procedures {
		names = append(names, p.Name)
	}
	return names
}
