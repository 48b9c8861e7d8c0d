package alloc

// ServingPaths are the functions every call that hands out an ID or a
// per-key value runs through on one of its serving paths: the HTTP/1.1
// front's routes (each package's Routes table, and the store's), the Leaf API, the per-key
// fast route, and the connect-go handlers. The coverage gate of
// `make jepsen` (jepsen/cover.sh, through jepsen/cmd/covergate) fails
// when no fault scenario reached one of them, or when one is missing from
// the coverage profile (renamed or moved: fix its entry here). So a new
// route goes in this list with the route itself, and the fault harness
// must then drive it (jepsen/harness/paths.go). TestServingPathsDeclared
// checks that each entry names a function the package declares, and that
// every method the route registrations (Routes, LeafRoutes, seqRoutes) name is listed.
//
// Pkg is the package's directory in the module; Func is the name `go tool
// covdata func` prints: "*Type.method" for a method, the bare name for a
// function.
//
// Calls that answer without handing anything out are in AnswerPaths,
// under the same gate. Left out on purpose: the registration functions
// (Routes, LeafRoutes, seqRoutes), which run once at start.
var ServingPaths = []ServingPath{
	// The allocsvr's HTTP/1.1 front (the fast routes of Routes,
	// LeafRoutes and seqRoutes, and SeqService's in alloc/seq), and the
	// Leaf path checks every front Leaf route runs (internal/routes).
	{"alloc", "*Service.nextIDsFast"},
	{"alloc", "*Service.nextIDRangesFast"},
	{"alloc", "*Service.leafSeqNextH1"},
	{"alloc", "appendIDs"},
	{"alloc/seq", "*Node.nextSeqFast"},
	{"alloc/seq", "appendNextSeq"},
	{"internal/routes", "segments"},
	{"internal/routes", "unreserved"},
	// The Leaf API (LeafRoutes), through net/http and the front.
	{"alloc", "*Service.leafSegment"},
	{"alloc", "*Service.leafSnowflake"},
	{"alloc", "*Service.leafSeq"},
	{"alloc", "leafResponse"},
	{"alloc", "leafSeqResponse"},
	{"alloc", "writeLeaf"},
	// The connect-go handlers of AllocService and SeqService.
	{"alloc", "*Service.NextIDs"},
	{"alloc", "*Service.NextIDRanges"},
	{"alloc", "*Service.NextSnowflakeIDs"},
	{"alloc", "*Service.DecodeSnowflake"},
	{"alloc", "*Service.Status"},
	{"alloc/seq", "Handler.NextSeq"},
	{"alloc/seq", "Handler.NextSeqs"},
	{"alloc/seq", "Handler.CurrentSeqs"},
	{"alloc/seq", "Handler.Routing"},
	// The per-key one-key calls: the front's route (NextSeqHere), the
	// Leaf GETs and the handler's NextSeq.
	{"alloc/seq", "*Node.NextSeqHere"},
	{"alloc/seq", "*Node.NextSeq"},
	{"alloc/seq", "*Node.CurrentSeq"},
	{"alloc/seq", "*Node.one"},
	{"alloc/seq", "*Node.oneFast"},
	// The store's HTTP/1.1 front and its handler for the same call.
	{"storage", "*Store.reserveFast"},
	{"storage", "*service.ReserveSegment"},
}

// AnswerPaths are the functions that answer a caller without handing
// out an ID: the store's reads that clients, seqctl and operators make
// (the RPCs role client may call, and GetRouting), and the Leaf routes'
// refusal of every method but GET. The project's rule is that every path
// that answers a call runs under the fault tests: a stale read after a
// leader change, a page token that skips or repeats tags, a routing
// version going backwards, or an ID handed out to a HEAD would pass every
// scenario unless the harness drives them (jepsen/harness/reads.go, and
// the checkers Listings, SpaceReads and LeafMethods). The coverage gate
// checks these as it checks ServingPaths (GatedPaths), and
// TestServingPathsDeclared that every such StoreService handler is
// listed.
var AnswerPaths = []ServingPath{
	// The Leaf routes' 405 to HEAD, POST and every method but GET.
	{"alloc", "getOnly"},
	// StoreService's reads: the handlers (a follower forwards to the
	// leader) and the leader's linearizable reads behind them.
	{"storage", "*service.GetTag"},
	{"storage", "*service.ListTags"},
	{"storage", "*service.GetSpace"},
	{"storage", "*service.ListSpaces"},
	{"storage", "*service.GetRouting"},
	{"storage", "*service.ClusterStatus"},
	{"storage", "*Store.getTag"},
	{"storage", "*Store.listTags"},
	{"storage", "*Store.listSpaces"},
	{"storage", "listPage"},
	{"storage", "*Store.getSpace"},
	{"storage", "*Store.getRouting"},
	{"storage", "readSpace"},
}

// GatedPaths are ServingPaths and AnswerPaths: every function the
// coverage gate requires some fault scenario to reach.
func GatedPaths() []ServingPath {
	return append(append([]ServingPath{}, ServingPaths...), AnswerPaths...)
}

// ServingPath names one function of ServingPaths or AnswerPaths.
type ServingPath struct {
	Pkg  string // directory in the module, e.g. "alloc/seq"
	Func string // as `go tool covdata func` names it, e.g. "*Node.one"
}
