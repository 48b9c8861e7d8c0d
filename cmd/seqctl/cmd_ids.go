package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/seqsvr/seqsvr/client"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func (a *app) printIDs(ids []int64, m interface{ GetIds() []int64 }) error {
	if a.g.output == "json" {
		switch m := m.(type) {
		case *seqsvrv1.NextIDsResponse:
			return a.jsonOut(m)
		case *seqsvrv1.NextSnowflakeIDsResponse:
			return a.jsonOut(m)
		}
	}
	for _, id := range ids {
		fmt.Fprintln(a.stdout, id)
	}
	return nil
}

// takeIDs runs one ID-taking call on a fresh alloc client and prints the
// result; wrap gives the response message used for -o json.
func (a *app) takeIDs(take func(*client.Client) ([]int64, error), wrap func([]int64) interface{ GetIds() []int64 }) error {
	c, err := a.alloc()
	if err != nil {
		return err
	}
	defer c.Close()
	ids, err := take(c)
	if err != nil {
		return err
	}
	return a.printIDs(ids, wrap(ids))
}

func countFlag(fs *flag.FlagSet) *int { return fs.Int("n", 1, "how many (1..10000)") }

func init() {
	commands = append(commands,
		command{path: "next", args: "TAG [-n N]", summary: "take N segment IDs of TAG (one per line)", min: 1, max: 1,
			setup: func(fs *flag.FlagSet) runFunc {
				n := countFlag(fs)
				return func(a *app, ctx context.Context, args []string) error {
					return a.takeIDs(func(c *client.Client) ([]int64, error) { return c.NextIDs(ctx, args[0], *n) },
						func(ids []int64) interface{ GetIds() []int64 } { return &seqsvrv1.NextIDsResponse{Ids: ids} })
				}
			}},
		command{path: "snowflake", args: "[-n N]", summary: "take N snowflake IDs (one per line)", min: 0, max: 0,
			setup: func(fs *flag.FlagSet) runFunc {
				n := countFlag(fs)
				return func(a *app, ctx context.Context, args []string) error {
					return a.takeIDs(func(c *client.Client) ([]int64, error) { return c.NextSnowflakeIDs(ctx, *n) },
						func(ids []int64) interface{ GetIds() []int64 } { return &seqsvrv1.NextSnowflakeIDsResponse{Ids: ids} })
				}
			}},
		command{path: "decode", args: "ID", summary: "a snowflake ID's time, worker ID, sequence", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				id, err := parseInt("ID", args[0])
				if err != nil {
					return err
				}
				c, err := a.alloc()
				if err != nil {
					return err
				}
				defer c.Close()
				sf, err := c.DecodeSnowflake(ctx, id)
				if err != nil {
					return err
				}
				t := sf.Time.Format("2006-01-02T15:04:05.000Z07:00")
				return a.out(&seqsvrv1.DecodeSnowflakeResponse{TimestampMs: sf.TimestampMs, Time: t, WorkerId: sf.WorkerID, Sequence: sf.Sequence},
					[]string{"ID", "TIME", "WORKER", "SEQUENCE"}, [][]string{{d(id), t, d(sf.WorkerID), d(sf.Sequence)}})
			})},
		command{path: "seq next", args: "SPACE KEY", summary: "take the next value of KEY's sequence", min: 2, max: 2,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error { return a.seq(ctx, args, true) })},
		command{path: "seq current", args: "SPACE KEY", summary: "KEY's current value (0: never used)", min: 2, max: 2,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error { return a.seq(ctx, args, false) })},
	)
}

func (a *app) seq(ctx context.Context, args []string, next bool) error {
	key, err := parseUint("KEY", args[1])
	if err != nil {
		return err
	}
	c, err := a.alloc()
	if err != nil {
		return err
	}
	defer c.Close()
	var v int64
	if next {
		v, err = c.NextSeq(ctx, args[0], key)
	} else {
		var vs []int64
		if vs, err = c.CurrentSeqs(ctx, args[0], []uint64{key}); err == nil {
			v = vs[0]
		}
	}
	if err != nil {
		return err
	}
	if a.g.output == "json" {
		return a.jsonOut(&seqsvrv1.NextSeqResponse{Seq: v, RoutingVersion: c.RoutingVersion(args[0])})
	}
	fmt.Fprintln(a.stdout, v)
	return nil
}
