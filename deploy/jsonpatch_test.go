package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// jsonPatchOp is one operation of an RFC 6902 JSON Patch, as
// `kubectl patch --type=json -p` sends it.
type jsonPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// applyJSONPatch applies the RFC 6902 patch (a JSON array of operations)
// to doc (JSON) and returns the result. It knows add, remove, replace and
// test (move and copy are refused: the runbook has none); every operation
// must succeed or the whole patch fails, as the API server applies it.
func applyJSONPatch(doc, patch []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(patch))
	dec.DisallowUnknownFields()
	var ops []jsonPatchOp
	if err := dec.Decode(&ops); err != nil {
		return nil, fmt.Errorf("the patch is not a JSON array of operations: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the patch has data after its array")
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("the patch has no operation")
	}
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	for i, op := range ops {
		var val any
		switch op.Op {
		case "add", "replace", "test":
			if op.Value == nil {
				return nil, fmt.Errorf("operation %d (%s %s) has no value", i, op.Op, op.Path)
			}
			if err := json.Unmarshal(op.Value, &val); err != nil {
				return nil, fmt.Errorf("operation %d: value: %w", i, err)
			}
		case "remove":
			if op.Value != nil {
				return nil, fmt.Errorf("operation %d: remove takes no value", i)
			}
		default:
			return nil, fmt.Errorf("operation %d: op %q: only add, remove, replace and test are known here", i, op.Op)
		}
		toks, err := jsonPointer(op.Path)
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		if len(toks) == 0 {
			switch op.Op {
			case "add", "replace":
				root = val
			case "test":
				if !reflect.DeepEqual(root, val) {
					return nil, fmt.Errorf("operation %d: test of the whole document failed", i)
				}
			default:
				return nil, fmt.Errorf("operation %d: the whole document cannot be removed", i)
			}
			continue
		}
		root, err = patchAt(root, toks, op.Op, val)
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, op.Op, op.Path, err)
		}
	}
	return json.Marshal(root)
}

// jsonPointer splits an RFC 6901 pointer into its unescaped tokens ("" is
// the whole document).
func jsonPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("path %q: a ~ not followed by 0 or 1", p)
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// patchAt walks node down toks and applies op at the last one, returning
// the node to put in node's place (an array grows or shrinks).
func patchAt(node any, toks []string, op string, val any) (any, error) {
	tok := toks[0]
	if len(toks) > 1 {
		switch n := node.(type) {
		case map[string]any:
			child, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			c, err := patchAt(child, toks[1:], op, val)
			if err != nil {
				return nil, err
			}
			n[tok] = c
			return n, nil
		case []any:
			i, err := arrayIndex(tok, len(n))
			if err != nil {
				return nil, err
			}
			c, err := patchAt(n[i], toks[1:], op, val)
			if err != nil {
				return nil, err
			}
			n[i] = c
			return n, nil
		default:
			return nil, fmt.Errorf("%q is inside a %T, not an object or array", tok, node)
		}
	}
	switch n := node.(type) {
	case map[string]any:
		cur, ok := n[tok]
		if !ok && op != "add" {
			return nil, fmt.Errorf("no member %q", tok)
		}
		switch op {
		case "add", "replace":
			n[tok] = val
		case "remove":
			delete(n, tok)
		case "test":
			if !reflect.DeepEqual(cur, val) {
				return nil, fmt.Errorf("test failed: the value is %s", jsonString(cur))
			}
		}
		return n, nil
	case []any:
		if op == "add" {
			i := len(n)
			if tok != "-" {
				var err error
				if i, err = arrayIndex(tok, len(n)+1); err != nil {
					return nil, err
				}
			}
			out := make([]any, 0, len(n)+1)
			out = append(append(append(out, n[:i]...), val), n[i:]...)
			return out, nil
		}
		i, err := arrayIndex(tok, len(n))
		if err != nil {
			return nil, err
		}
		switch op {
		case "replace":
			n[i] = val
		case "remove":
			return append(n[:i:i], n[i+1:]...), nil
		case "test":
			if !reflect.DeepEqual(n[i], val) {
				return nil, fmt.Errorf("test failed: the value is %s", jsonString(n[i]))
			}
		}
		return n, nil
	default:
		return nil, fmt.Errorf("%q is inside a %T, not an object or array", tok, node)
	}
}

// arrayIndex is tok as an index below n: decimal digits, no leading zero
// ("-", the end, only add takes).
func arrayIndex(tok string, n int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || tok != strconv.Itoa(i) || i < 0 {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	if i >= n {
		return 0, fmt.Errorf("index %d is past the array's end (%d elements)", i, n)
	}
	return i, nil
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
