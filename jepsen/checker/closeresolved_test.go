package checker

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// TestCloseResolved: a resolved reservation's window ends at the first
// return of an operation on its tag that saw max_id at or above its
// segment's last ID, and not before its own call.
func TestCloseResolved(t *testing.T) {
	res := func(tag string, first, last, call int64) porcupine.Operation {
		return porcupine.Operation{Input: linInput{kind: history.Reserve, tag: tag},
			Output: linOutput{ok: true, first: first, last: last}, Call: call, Return: 1000}
	}
	get := func(tag string, max, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: linInput{kind: history.GetTag, tag: tag},
			Output: linOutput{ok: true, maxID: max}, Call: call, Return: ret}
	}
	h := []porcupine.Operation{
		res("a", 11, 20, 10), // resolved: closed by the GetTag that saw 20 at 30
		get("a", 10, 12, 14), // saw less: no bound
		get("a", 20, 25, 30),
		get("a", 40, 26, 28), // saw more, returned earlier: the bound
		get("b", 99, 1, 5),   // another tag
		res("a", 41, 50, 60), // resolved: nothing saw 50; stays open
		res("a", 21, 30, 29), // resolved: the bound (28) is before its call; left for porcupine
	}
	closeResolved(h, []int{0, 5, 6})
	if h[0].Return != 28 {
		t.Fatalf("first reservation closed at %d, want 28", h[0].Return)
	}
	if h[5].Return != 1000 || h[6].Return != 1000 {
		t.Fatalf("windows changed that must stay: %d %d", h[5].Return, h[6].Return)
	}
}
