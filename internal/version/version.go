// Package version is the one version string every binary prints for
// --version: the Makefile sets Version with
// -ldflags "-X github.com/seqsvr/seqsvr/internal/version.Version=...";
// without it the module version or VCS revision recorded by the Go
// toolchain is used, so `go build` and `go install` binaries still say
// what they were built from.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time; empty means "ask the build info".
var Version = ""

// String is the version alone: Version, else the main module's version
// (go install ...@v1.2.3), else the VCS revision (with "+dirty" for a
// modified tree), else "devel".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := vcs(info)
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "devel-" + rev + dirty
}

// Commit is set at link time (make build, make release) to the commit
// built; empty means "ask the build info".
var Commit = ""

// CommitString is the commit the binary was built from: Commit, else the
// VCS revision the Go toolchain recorded ("+dirty" for a modified tree),
// else "".
func CommitString() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := vcs(info)
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// vcs is the revision the Go toolchain recorded, and "+dirty" when the
// tree was modified.
func vcs(info *debug.BuildInfo) (rev, dirty string) {
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return rev, dirty
}

// Line is what `NAME --version` prints: "NAME VERSION (GOVERSION
// OS/ARCH, commit COMMIT)", the commit left out when unknown.
func Line(name string) string {
	c := ""
	if commit := CommitString(); commit != "" {
		c = ", commit " + commit
	}
	return fmt.Sprintf("%s %s (%s %s/%s%s)", name, String(), runtime.Version(), runtime.GOOS, runtime.GOARCH, c)
}

// Requested reports whether args ask for the version: -version or
// --version anywhere before a "--".
func Requested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-version", "--version":
			return true
		}
	}
	return false
}
