package auth

import (
	"strings"
	"testing"
)

// A memo answers as Allows does, whatever came before it on the
// connection: every pair of checkCases in turn on one memo.
func TestAllowsMemoAgreesWithAllows(t *testing.T) {
	a, _ := newAuth(t)
	var m Memo
	for _, prev := range checkCases {
		for _, c := range checkCases {
			a.AllowsMemo(&m, []byte(prev.header), need(prev.proc))
			role := need(c.proc)
			if got, want := a.AllowsMemo(&m, []byte(c.header), role), a.Allows([]byte(c.header), role); got != want {
				t.Errorf("after %q on %s: AllowsMemo(%q, %s) = %v, Allows %v", prev.header, prev.proc, c.header, c.proc, got, want)
			}
		}
	}
	var none *Authorizer
	if !none.AllowsMemo(&m, nil, Admin) {
		t.Error("nil Authorizer refused")
	}
}

// The remembered value is the one presented, not an alias of the front's
// buffer (which the next request overwrites), and only values that
// matched are remembered.
func TestAllowsMemoKeepsItsOwnCopy(t *testing.T) {
	a, _ := newAuth(t)
	var m Memo
	buf := []byte("Bearer " + clientTok)
	if !a.AllowsMemo(&m, buf, Client) {
		t.Fatal("client token refused")
	}
	copy(buf[len("Bearer "):], strings.Repeat("x", len(clientTok)))
	if a.AllowsMemo(&m, buf, Client) {
		t.Error("an unknown token of the same length allowed after the buffer was overwritten")
	}
	if !a.AllowsMemo(&m, []byte("Bearer "+clientTok), Client) {
		t.Error("client token refused after a refusal")
	}
	var fresh Memo
	a.AllowsMemo(&fresh, []byte("Bearer nope-nope-nope-nope"), Client)
	if fresh.value != nil || fresh.tok != nil {
		t.Error("a refused value was remembered")
	}
}

// After a reload the memo is not trusted: a token removed from the file
// stops working on a connection that used it, and a role changed in the
// file takes effect there too.
func TestAllowsMemoFollowsReload(t *testing.T) {
	a, path := newAuth(t)
	var m Memo
	h := []byte("Bearer " + allocTok)
	if !a.AllowsMemo(&m, h, Alloc) {
		t.Fatal("alloc token refused")
	}
	writeFile(t, path, `[{"name": "app", "token": "`+clientTok+`", "roles": ["client"]},
 {"name": "allocsvr", "token": "`+allocTok+`", "roles": ["client"]}]`)
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if a.AllowsMemo(&m, h, Alloc) {
		t.Error("alloc role still allowed after the file made the token a client")
	}
	if !a.AllowsMemo(&m, h, Client) {
		t.Error("client role refused")
	}
	writeFile(t, path, `[{"name": "app", "token": "`+clientTok+`", "roles": ["client"]}]`)
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if a.AllowsMemo(&m, h, Client) {
		t.Error("removed token still allowed on the connection that used it")
	}
}

// TestAllowsMemoAllocatesNothing: once the memo holds the value, a check
// allocates nothing.
func TestAllowsMemoAllocatesNothing(t *testing.T) {
	a, _ := newAuth(t)
	var m Memo
	h, p := []byte("Bearer "+clientTok), []byte("/seqsvr.v1.AllocService/NextIDs")
	a.AllowsMemo(&m, h, need(p))
	if n := testing.AllocsPerRun(100, func() {
		if !a.AllowsMemo(&m, h, need(p)) {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations per check, want 0", n)
	}
}

// BenchmarkAllowsMemo is the front's check on a kept-alive connection that
// sends the same 64-byte token each time (ten listed), beside
// BenchmarkAllows, the check without a memo.
func BenchmarkAllowsMemo(b *testing.B) {
	a, h, p := tenTokens(b)
	var m Memo
	for b.Loop() {
		if !a.AllowsMemo(&m, h, need(p)) {
			b.Fatal("refused")
		}
	}
}
