package main

import (
	"flag"
	"fmt"
	"strconv"
)

// versionHold is --cluster-version-hold: the level above which the
// cluster version is not raised while this member is in the cluster.
type versionHold struct {
	ClusterVersionHold uint32
}

func (v *versionHold) register(fs *flag.FlagSet) {
	fs.Func("cluster-version-hold", "do not let the cluster version rise above this level while this member is in the cluster\n(0: no hold); set it before an upgrade whose rollback matters, restart without it to lift it (docs/upgrading.md)", func(s string) error {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("a feature level (0: no hold): %w", err)
		}
		v.ClusterVersionHold = uint32(n)
		return nil
	})
}
