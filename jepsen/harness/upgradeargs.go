package harness

import (
	"path/filepath"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// baseAllocArgs are an allocsvr's flags for the base release, from the
// current build's: that release has no --store-cert/--store-key and
// presents its --tls-cert to the stores as its client certificate, so it
// serves and calls with the members' certificate (server and client use),
// as every process did then. A flag it does not know would stop it at
// once ("flag provided but not defined"). Without the secure mode args
// are unchanged.
func baseAllocArgs(args []string, sec *launch.Security) []string {
	if sec == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "--store-cert" || a == "--store-key") && i+1 < len(args):
			i++
		case a == "--tls-cert" && i+1 < len(args) && args[i+1] == sec.AllocServeCertFile:
			out = append(out, a, sec.CertFile)
			i++
		case a == "--tls-key" && i+1 < len(args) && args[i+1] == sec.AllocServeKeyFile:
			out = append(out, a, sec.KeyFile)
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// setBinary points p at binDir's binary, with the flags that binary
// takes: an allocsvr on the base release gets baseAllocArgs of the flags
// it was created with, on the current build those flags again.
func (u *upgrader) setBinary(p *launch.Proc, binDir string) {
	if u.args == nil {
		u.args = map[*launch.Proc][]string{}
	}
	if _, ok := u.args[p]; !ok {
		u.args[p] = append([]string{}, p.ExtraArgs...)
	}
	p.Binary = filepath.Join(binDir, string(p.Kind))
	p.ExtraArgs = append([]string{}, u.args[p]...)
	if p.Kind == launch.KindAlloc && filepath.Clean(binDir) == filepath.Clean(u.base) {
		p.ExtraArgs = baseAllocArgs(p.ExtraArgs, u.sec)
	}
}
