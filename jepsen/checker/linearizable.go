package checker

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

type linInput struct {
	kind string
	tag  string
	size int64
}

type linOutput struct {
	first, last, maxID int64
}

// StoreModel is a fetch-and-add register per tag: the state is the tag's
// max_id; ReserveSegment(size) must return [s+1, s+size] and moves the
// state to s+size; GetTag must return s. Tags start at 0.
func StoreModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var tags []string
			for _, op := range h {
				t := op.Input.(linInput).tag
				if _, ok := by[t]; !ok {
					tags = append(tags, t)
				}
				by[t] = append(by[t], op)
			}
			sort.Strings(tags)
			out := make([][]porcupine.Operation, 0, len(tags))
			for _, t := range tags {
				out = append(out, by[t])
			}
			return out
		},
		Init: func() any { return int64(0) },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(int64), input.(linInput), output.(linOutput)
			switch in.kind {
			case history.Reserve:
				if out.first == s+1 && out.last == s+in.size {
					return true, out.last
				}
				return false, s
			default:
				return out.maxID == s, s
			}
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			if in.kind == history.Reserve {
				return fmt.Sprintf("reserve(%s,%d) -> [%d,%d]", in.tag, in.size, out.first, out.last)
			}
			return fmt.Sprintf("get(%s) -> %d", in.tag, out.maxID)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("max_id=%d", state.(int64)) },
	}
}

// Linearizable checks the store operations (ReserveSegment, GetTag) of ops
// with porcupine. Successful operations and resolved reservations take
// part; failed reads are dropped (they change nothing); a reservation whose
// outcome stayed unknown fails the check, since it might have taken effect
// anywhere. On a violation the HTML visualization is written to outDir.
func Linearizable(ops []*history.Op, outDir string, timeout time.Duration) Result {
	const name = Linearizability
	var h []porcupine.Operation
	unresolved := 0
	maxClient := 0
	for _, op := range ops {
		if op.Client > maxClient {
			maxClient = op.Client
		}
	}
	extra := maxClient + 1
	for _, op := range ops {
		switch {
		case op.Kind == history.Reserve && op.Unresolved:
			unresolved++
			continue
		case op.Kind == history.Reserve && op.OK, op.Kind == history.GetTag && op.OK:
		default:
			continue
		}
		client := op.Client
		if op.Resolved { // its worker moved on: give it a lane of its own
			client = extra
			extra++
		}
		h = append(h, porcupine.Operation{
			ClientId: client,
			Input:    linInput{kind: op.Kind, tag: op.Tag, size: op.Size},
			Output:   linOutput{first: op.First, last: op.Last, maxID: op.MaxID},
			Call:     op.Call,
			Return:   op.Return,
			Metadata: fmt.Sprintf("op %d on %s", op.ID, op.Target),
		})
	}
	if unresolved > 0 {
		r := fail(name, len(h), "%d reservation(s) with unknown outcome could not be resolved; verdict Unknown", unresolved)
		r.Undecided = true
		return r
	}
	if len(h) == 0 {
		return fail(name, 0, "no store operations succeeded")
	}
	model := StoreModel()
	res, info := porcupine.CheckOperationsVerbose(model, h, timeout)
	switch res {
	case porcupine.Ok:
		return pass(name, len(h), "%d operations linearizable", len(h))
	case porcupine.Unknown:
		r := fail(name, len(h), "porcupine timed out after %s: verdict Unknown", timeout)
		r.Undecided = true
		return r
	}
	r := fail(name, len(h), "history of %d operations is NOT linearizable", len(h))
	if outDir != "" {
		path := filepath.Join(outDir, "linearizability.html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			r.Artifact = path
		} else {
			r.Detail += fmt.Sprintf(" (visualization: %v)", err)
		}
	}
	return r
}
