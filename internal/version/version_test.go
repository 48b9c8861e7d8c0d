package version

import (
	"strings"
	"testing"
)

func TestRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"--node-id", "a", "--version"}, true},
		{[]string{"--", "--version"}, false},
		{[]string{"--versions"}, false},
	} {
		if got := Requested(c.args); got != c.want {
			t.Errorf("Requested(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3"
	if l := Line("storesvr"); !strings.HasPrefix(l, "storesvr v1.2.3 (go") {
		t.Fatalf("Line = %q, want it to start with the name, the linked version and the Go version", l)
	}
	Version = ""
	if s := String(); s == "" {
		t.Fatal("String is empty without a linked version")
	}
}

func TestLineCommit(t *testing.T) {
	old, oldC := Version, Commit
	t.Cleanup(func() { Version, Commit = old, oldC })
	Version, Commit = "1.2.3", "955cac4ae3050ae2967e5743cdfb4493e88c69ae"
	if l := Line("storesvr"); !strings.HasPrefix(l, "storesvr 1.2.3 (go") || !strings.HasSuffix(l, ", commit 955cac4ae3050ae2967e5743cdfb4493e88c69ae)") {
		t.Fatalf("Line = %q, want the version and the commit", l)
	}
}
