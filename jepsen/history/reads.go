package history

// The store's reads that answer callers besides GetTag (seqctl's and
// operators' calls), and the Leaf routes' refusal of methods other than
// GET. None takes effect, so an operation that failed tells nothing and
// the checkers read only answers.
const (
	// ListTags is one whole listing: StoreService.ListTags page after
	// page (each page to a random member, Pages of them) until
	// next_page_token is empty. Names are the tags in the order the pages
	// answered them; Call is the first page's call and Return the last
	// page's return. A listing with a failed page failed.
	ListTags = "list-tags"
	// ListSpaces is ListTags for StoreService.ListSpaces.
	ListSpaces = "list-spaces"
	// GetSpace is StoreService.GetSpace of Space; SpaceInfo is the answer.
	GetSpace = "get-space"
	// GetRouting is StoreService.GetRouting of Space; Routing is the
	// answer.
	GetRouting = "get-routing"
	// LeafMethod is a Leaf route (URL, its path) called with Method
	// (HEAD or POST): HTTPStatus and Allow are what came back (0
	// and "" without an answer). OK means 405 allowing GET and no ID
	// (checker.LeafRefused).
	LeafMethod = "leaf-method"
)

// Reads are the store read kinds above.
var Reads = []string{ListTags, ListSpaces, GetSpace, GetRouting}

// SpaceInfo is a GetSpace answer: the fields a space never changes.
type SpaceInfo struct {
	KeyCount     uint64 `json:"key_count"`
	SectionSize  uint64 `json:"section_size"`
	SectionCount uint64 `json:"section_count"`
	Step         int64  `json:"step"`
	CreateTimeMs int64  `json:"create_time_ms"`
}

// Routing is a GetRouting answer, without the owners' URLs and leases
// (a lease moves without a new routing version).
type Routing struct {
	Version     uint64      `json:"version"`
	KeyCount    uint64      `json:"key_count"`
	SectionSize uint64      `json:"section_size"`
	Runs        []RoutedRun `json:"runs"`
}

// RoutedRun is one SectionRange of a Routing.
type RoutedRun struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Owner string `json:"owner,omitempty"`
	Next  string `json:"next,omitempty"`
}
