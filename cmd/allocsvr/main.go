// Command allocsvr hands out IDs: segment IDs from per-tag double buffers
// refilled from the storesvr cluster, and snowflake IDs from a worker ID
// leased in it. Run `allocsvr --help` for the flags; every flag also reads
// SEQSVR_<NAME>.
package main

import (
	"fmt"
	"os"

	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("allocsvr"))
		return
	}
	serve.TuneRuntime()
	os.Exit(serve.Main("allocsvr", os.Args[1:], os.Getenv, os.Stderr, parseConfig))
}
