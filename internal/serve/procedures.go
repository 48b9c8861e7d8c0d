package serve

import (
	"maps"
	"slices"

	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// mounted are the procedures NewHandler mounts itself, with their roles:
// grpc.health.v1 is open, like /healthz and /readyz (load balancers probe
// without tokens); gRPC reflection needs role client.
var mounted = auth.Roles{
	"/" + grpchealth.HealthV1ServiceName + "/Check":                       auth.Open,
	"/" + grpchealth.HealthV1ServiceName + "/Watch":                       auth.Open,
	"/" + grpcreflect.ReflectV1ServiceName + "/ServerReflectionInfo":      auth.Client,
	"/" + grpcreflect.ReflectV1AlphaServiceName + "/ServerReflectionInfo": auth.Client,
}

// procedureNames are the procedures a process serves: its table's and the
// health and reflection services NewHandler mounts. Per-RPC metrics name
// these and count any other path as unknown, so a caller cannot make a
// series with a path of its own.
func procedureNames(t routes.Table) []string {
	names := slices.Sorted(maps.Keys(mounted))
	for _, p := range t.Procedures {
		names = append(names, p.Name)
	}
	return names
}

// roles are the roles of everything a process serves with table t: each
// procedure's as the table declares it, and the mounted ones'.
func roles(t routes.Table) auth.Roles {
	rs := t.Roles()
	maps.Copy(rs, mounted)
	return rs
}
