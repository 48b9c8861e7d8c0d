package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// clusterVersionWait bounds the wait for the cluster version: the
// members poll each other every 2 s (docs/upgrading.md), so a few polls.
const clusterVersionWait = 30 * time.Second

// waitClusterVersion waits until the leader's ClusterStatus shows a
// cluster_version at the highest feature level any member reports, as
// docs/upgrading.md has the operator do before replacing the allocsvrs.
// It answers what it saw and whether the version failed to rise in time.
// A build whose ClusterStatus has no cluster_version (the cluster version
// came with issue 23) skips the wait; the fields are read by name so the
// harness builds with and without them.
func (u *upgrader) waitClusterVersion(ctx context.Context) (string, bool) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, clusterVersionWait)
	defer cancel()
	last := "no answer"
	for {
		cv, top, err := u.clusterVersion(wctx)
		switch {
		case errors.Is(err, errNoClusterVersion):
			return "not in this build's ClusterStatus", false
		case err != nil:
			last = err.Error()
		case top > 0 && cv >= top:
			return fmt.Sprintf("%d after %s", cv, time.Since(start).Round(100*time.Millisecond)), false
		default:
			last = fmt.Sprintf("%d while the members' highest level is %d", cv, top)
		}
		if launch.Sleep(wctx, 200*time.Millisecond) != nil {
			if ctx.Err() != nil {
				return "the run ended while waiting: " + last, false
			}
			return fmt.Sprintf("still %s after %s", last, clusterVersionWait), true
		}
	}
}

var errNoClusterVersion = errors.New("no cluster_version field")

// clusterVersion is the leader's cluster_version and the highest level of
// its members.
func (u *upgrader) clusterVersion(ctx context.Context) (cv, top uint64, err error) {
	l, err := u.c.Leader(ctx)
	if err != nil {
		return 0, 0, err
	}
	st, err := u.c.Status(ctx, l)
	if err != nil {
		return 0, 0, err
	}
	cv, ok := uintField(st, "cluster_version")
	if !ok {
		return 0, 0, errNoClusterVersion
	}
	for _, m := range st.GetMembers() {
		lv, _ := uintField(m, "level")
		top = max(top, lv)
	}
	return cv, top, nil
}

// uintField reads an unsigned integer field of m by its proto name.
func uintField(m proto.Message, name protoreflect.Name) (uint64, bool) {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(name)
	if fd == nil {
		return 0, false
	}
	switch fd.Kind() {
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return r.Get(fd).Uint(), true
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return uint64(max(r.Get(fd).Int(), 0)), true
	}
	return 0, false
}
