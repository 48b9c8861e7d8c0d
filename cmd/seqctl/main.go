// Command seqctl is the operators' command line for seqsvr: tags, spaces
// and store members on the storesvr cluster, IDs and sequences from the
// allocsvrs, and the status of both. Run `seqctl --help`.
//
// Exit codes, for scripts: 0 success; 1 a call failed (stderr says
// "seqctl: CODE: message" with the Connect code, e.g. not_found); 2 the
// command line or local configuration is wrong (usage on stderr).
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitCall  = 1
	exitUsage = 2
)

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	a := &app{getenv: getenv, stdout: stdout, stderr: stderr}
	return a.main(args)
}
