package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

func names(ps []*launch.Proc) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// partition injects cut (which calls e.Net), holds 1-3 s (2-6 election
// timeouts), heals.
func partition(ctx context.Context, e *Env, r *rand.Rand, name string, cut func() (string, error)) error {
	if e.Net == nil {
		e.Log.Skip(name, "network partitions unavailable (needs root and ip netns)")
		return nil
	}
	what, err := cut()
	if err != nil {
		_ = e.Net.Heal()
		return fmt.Errorf("%s: %w", name, err)
	}
	e.Log.Inject(name, "net", "%s", what)
	d := hold(ctx, r, time.Second, 3*time.Second)
	if err := e.Net.Heal(); err != nil {
		return err
	}
	e.Log.Heal(name, "net", "healed after %s", d.Round(time.Millisecond))
	return nil
}

func partitionLeader(ctx context.Context, e *Env, r *rand.Rand) error {
	l, err := e.leader(ctx)
	if e.skipped("partition-leader", err) {
		return nil
	}
	return partition(ctx, e, r, "partition-leader", func() (string, error) {
		rest := names(e.C.All())
		return fmt.Sprintf("%s cut from %v", l.Name, rest), e.Net.Cut([]string{l.Name}, rest)
	})
}

func partitionHalves(ctx context.Context, e *Env, r *rand.Rand) error {
	return partition(ctx, e, r, "partition-halves", func() (string, error) {
		all := names(e.C.All())
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		k := 1 + r.Intn(len(all)-1)
		a, b := all[:k], all[k:]
		return fmt.Sprintf("%v | %v", a, b), e.Net.Cut(a, b)
	})
}

// partitionRing lets each store see only its ring neighbours (Jepsen's
// overlapping majorities); with three stores, it cuts one link.
func partitionRing(ctx context.Context, e *Env, r *rand.Rand) error {
	return partition(ctx, e, r, "partition-ring", func() (string, error) {
		s := names(e.C.Stores)
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		n := len(s)
		var cuts []string
		for i := range n {
			for j := i + 1; j < n; j++ {
				neighbours := j-i == 1 || j-i == n-1
				if n > 3 && neighbours || n <= 3 && !(i == 0 && j == n-1) {
					continue
				}
				if err := e.Net.Cut([]string{s[i]}, []string{s[j]}); err != nil {
					return "", err
				}
				cuts = append(cuts, s[i]+"-"+s[j])
			}
		}
		return fmt.Sprintf("ring %v, cut links %v", s, cuts), nil
	})
}

// partitionBridge splits the stores in two halves that only one member
// (the bridge) can reach both of.
func partitionBridge(ctx context.Context, e *Env, r *rand.Rand) error {
	return partition(ctx, e, r, "partition-bridge", func() (string, error) {
		s := names(e.C.Stores)
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		bridge, rest := s[0], s[1:]
		a, b := rest[:len(rest)/2], rest[len(rest)/2:]
		return fmt.Sprintf("%v <-%s-> %v", a, bridge, b), e.Net.Cut(a, b)
	})
}

// partitionOneWay drops packets in one direction only, between the leader
// and a follower.
func partitionOneWay(ctx context.Context, e *Env, r *rand.Rand) error {
	f, l, err := e.follower(ctx, r)
	if e.skipped("partition-oneway", err) {
		return nil
	}
	from, to := l, f
	if r.Intn(2) == 0 {
		from, to = f, l
	}
	return partition(ctx, e, r, "partition-oneway", func() (string, error) {
		return fmt.Sprintf("drop %s -> %s", from.Name, to.Name), e.Net.Block(from.Name, to.Name)
	})
}

// isolateAlloc cuts an allocsvr from every store for about a lease TTL:
// it must keep serving segment IDs from its buffers and stop serving
// snowflake IDs once its lease can no longer be renewed.
func isolateAlloc(ctx context.Context, e *Env, r *rand.Rand) error {
	if e.Net == nil {
		e.Log.Skip("isolate-alloc", "network partitions unavailable (needs root and ip netns)")
		return nil
	}
	a := randomAlloc(e, r)
	if a == nil {
		return nil
	}
	if err := e.Net.Cut([]string{a.Name}, names(e.C.Stores)); err != nil {
		_ = e.Net.Heal()
		return err
	}
	e.Log.Inject("isolate-alloc", a.Name, "cut from all stores")
	d := hold(ctx, r, e.LeaseTTL/2, e.LeaseTTL*3/2)
	if err := e.Net.Heal(); err != nil {
		return err
	}
	e.Log.Heal("isolate-alloc", a.Name, "reconnected after %s", d.Round(time.Millisecond))
	return nil
}

// isolateAllocLong cuts an allocsvr off from every store for longer than
// its buffers last (5-9 s: segments drain in well under a second under
// the workload, the snowflake lease fences after 2 s): it serves, drains,
// answers unavailable, and must recover when reconnected, its IDs still
// increasing within its lifetime and none of its buffered IDs burned.
func isolateAllocLong(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "isolate-alloc-long"
	if e.Net == nil {
		e.Log.Skip(name, "network partitions unavailable (needs root and ip netns)")
		return nil
	}
	a := randomAlloc(e, r)
	if a == nil {
		return nil
	}
	stores := names(e.C.Stores)
	if err := e.Net.Cut([]string{a.Name}, stores); err != nil {
		_ = e.Net.Uncut([]string{a.Name}, stores)
		return err
	}
	e.Log.Inject(name, a.Name, "cut from all stores")
	d := hold(ctx, r, 5*time.Second, 9*time.Second)
	if err := e.Net.Uncut([]string{a.Name}, stores); err != nil {
		return err
	}
	e.Log.Heal(name, a.Name, "reconnected after %s", d.Round(time.Millisecond))
	return nil
}
