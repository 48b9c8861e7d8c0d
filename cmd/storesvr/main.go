// Command storesvr is one member of seqsvr's Raft-replicated tag store.
// Run `storesvr --help` for the flags; every flag also reads SEQSVR_<NAME>.
package main

import (
	"fmt"
	"os"

	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("storesvr"))
		return
	}
	serve.TuneRuntime()
	os.Exit(serve.Main("storesvr", os.Args[1:], os.Getenv, os.Stderr, parseConfig))
}
