package auth

import "testing"

// PathRole judges a request by its path alone: every procedure in force
// its role, the Leaf API LeafRole, anything shaped as a procedure (unknown
// ones too) at least a valid token, and other paths not at all.
func TestPathRole(t *testing.T) {
	for path, want := range map[string]struct {
		need    Role
		guarded bool
	}{
		"/seqsvr.v1.AllocService/NextIDs":   {Client, true},
		"/seqsvr.v1.StoreService/CreateTag": {Admin, true},
		"/seqsvr.v1.StoreService/NoSuch":    {Metrics, true},
		"/other.v9.Service/Method":          {Metrics, true},
		"/grpc.health.v1.Health/Check":      {Open, true},
		"/api/segment/get/order":            {LeafRole, true},
		"/healthz":                          {Open, false},
		"/metrics":                          {Open, false},
		"/":                                 {Open, false},
		"/ui/alloc.js":                      {Open, false},
		"/debug/pprof/heap":                 {Open, false},
		"/seqsvr.v1.AllocService/NextIDs/x": {Open, false},
		"/seqsvr.v1.AllocService/":          {Open, false},
	} {
		need, guarded := PathRole(testRoles, path)
		if need != want.need || guarded != want.guarded {
			t.Errorf("PathRole(%q) = %v, %v; want %v, %v", path, need, guarded, want.need, want.guarded)
		}
		if n, g := PathRole(testRoles, []byte(path)); n != need || g != guarded {
			t.Errorf("PathRole(%q) differs between bytes and string", path)
		}
	}
}

// A metrics token (a scraper's) calls nothing: the Leaf API refuses it
// with permission_denied, and so does every procedure (routes.Unary
// refuses a procedure declared with a role below client).
func TestMetricsRoleCallsNothing(t *testing.T) {
	r, err := ParseRole("metrics")
	if err != nil || r != Metrics || r.String() != "metrics" {
		t.Fatalf("ParseRole(metrics) = %v, %v", r, err)
	}
	if LeafRole <= Metrics {
		t.Error("the Leaf API is open to a metrics token")
	}
}
