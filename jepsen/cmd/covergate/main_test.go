package main

import (
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/routes"
)

const sample = `github.com/seqsvr/seqsvr/alloc/fastroutes.go:40:		*Service.nextIDsFast		75.0%
github.com/seqsvr/seqsvr/alloc/seq/one.go:33:		*Node.NextSeqHere		0.0%
github.com/seqsvr/seqsvr/alloc/planted.go:7:		repeatCarried		0.0%
github.com/seqsvr/seqsvr/alloc/planted_faults.go:15:		repeatCarried		50.0%
total						(statements)	61.2%
`

func TestGate(t *testing.T) {
	var out strings.Builder
	reached := []routes.GatedFunc{{Pkg: "alloc", Func: "*Service.nextIDsFast"}, {Pkg: "alloc", Func: "repeatCarried"}}
	if code := gate(strings.NewReader(sample), &out, reached); code != 0 {
		t.Fatalf("every function reached, exit %d:\n%s", code, out.String())
	}
	for _, miss := range []routes.GatedFunc{{Pkg: "alloc/seq", Func: "*Node.NextSeqHere"}, {Pkg: "alloc", Func: "*Service.gone"}, {Pkg: "alloc/seq", Func: "*Service.nextIDsFast"}} {
		out.Reset()
		if code := gate(strings.NewReader(sample), &out, append(reached, miss)); code != 1 || !strings.Contains(out.String(), miss.Func) {
			t.Fatalf("%v unreached or absent, exit %d:\n%s", miss, code, out.String())
		}
	}
	if code := gate(strings.NewReader("nothing\n"), &out, reached); code != 2 {
		t.Fatalf("an empty profile: exit %d", code)
	}
}
