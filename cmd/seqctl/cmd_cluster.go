package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// VERSION and LEVEL are each member's release and feature level as the
// answering member last polled them (empty from a base-release store,
// which reports neither); CLUSTER_VERSION is the cluster's level,
// CLUSTER_ID and GENERATION its identity (the generation is 0 for a
// cluster bootstrapped fresh and rises with every restore or recovery).
var memberHeader = []string{"ID", "RAFT_ADDR", "HTTP_ADDR", "SUFFRAGE", "STATE", "LEADER", "VERSION", "LEVEL", "CLUSTER_VERSION", "CLUSTER_ID", "GENERATION"}

func (a *app) members(st *seqsvrv1.ClusterStatusResponse) error {
	var rows [][]string
	for _, m := range st.GetMembers() {
		leader := ""
		if m.GetId() == st.GetLeaderId() {
			leader = "*"
		}
		level, cv := "", ""
		if m.GetLevel() != 0 {
			level = u(uint64(m.GetLevel()))
		}
		if st.GetClusterVersion() != 0 {
			cv = u(uint64(st.GetClusterVersion()))
		}
		rows = append(rows, []string{m.GetId(), m.GetRaftAddr(), m.GetHttpAddr(), m.GetSuffrage(), m.GetState(), leader,
			m.GetVersion(), level, cv, st.GetClusterId(), d(st.GetGeneration())})
	}
	return a.out(st, memberHeader, rows)
}

func clusterStatus(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.ClusterStatusRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	return s.ClusterStatus
}

func init() {
	commands = append(commands,
		command{path: "member list", args: "", summary: "the store cluster's members", min: 0, max: 0,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				st, err := storeOne(a, ctx, clusterStatus, &seqsvrv1.ClusterStatusRequest{})
				if err != nil {
					return err
				}
				return a.members(st)
			})},
		command{path: "member add", args: "ID RAFT_ADDR HTTP_ADDR", summary: "add a store member (or start it with --join)", min: 3, max: 3,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				st, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.AddMemberRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
					return s.AddMember
				}, &seqsvrv1.AddMemberRequest{Id: args[0], RaftAddr: args[1], HttpAddr: args[2]})
				if err != nil {
					return err
				}
				return a.members(st)
			})},
		command{path: "member remove", args: "ID", summary: "remove a store member", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				st, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.RemoveMemberRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
					return s.RemoveMember
				}, &seqsvrv1.RemoveMemberRequest{Id: args[0]})
				if err != nil {
					return err
				}
				return a.members(st)
			})},
		command{path: "member replace", args: "ID", summary: "take back a member that lost its data dir: remove its entry, add it as a non-voter (promoted once caught up); refused while it runs", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				st, err := storeOne(a, ctx, clusterStatus, &seqsvrv1.ClusterStatusRequest{})
				if err != nil {
					return err
				}
				var m *seqsvrv1.Member
				for _, x := range st.GetMembers() {
					if x.GetId() == args[0] {
						m = x
					}
				}
				if m == nil {
					return connect.NewError(connect.CodeNotFound, fmt.Errorf("%s is not a member (member list shows them)", args[0]))
				}
				st, err = storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.AddMemberRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
					return s.AddMember
				}, &seqsvrv1.AddMemberRequest{Id: m.GetId(), RaftAddr: m.GetRaftAddr(), HttpAddr: m.GetHttpAddr(), Replace: true})
				if err != nil {
					return err
				}
				return a.members(st)
			})},
		command{path: "status", args: "", summary: "each --store member and --alloc allocsvr (exit 1 if one is down)", min: 0, max: 0,
			setup: func(fs *flag.FlagSet) runFunc { return (*app).status }},
	)
}

// status asks every store member and every allocsvr given, each on its own.
func (a *app) status(ctx context.Context, _ []string) error {
	if a.g.store == "" && a.g.alloc == "" {
		return configError{errors.New("status needs --store or --alloc (or $SEQCTL_STORE, $SEQCTL_ALLOC)")}
	}
	type result struct {
		URL    string          `json:"url"`
		Status json.RawMessage `json:"status,omitempty"`
		Error  string          `json:"error,omitempty"`
	}
	var out struct {
		Stores []result `json:"stores"`
		Allocs []result `json:"allocs"`
	}
	var storeRows, allocRows [][]string
	failed := 0
	pj := protojson.MarshalOptions{EmitUnpopulated: true}
	one := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, min(a.g.timeout, 3*time.Second))
	}
	if a.g.store != "" {
		urls, err := a.urls(a.g.store, "store")
		if err != nil {
			return err
		}
		for _, url := range urls {
			var st *seqsvrv1.ClusterStatusResponse
			m, err := a.member(url)
			if err == nil {
				cctx, cancel := one(ctx)
				var res *connect.Response[seqsvrv1.ClusterStatusResponse]
				if res, err = m.ClusterStatus(cctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{})); err == nil {
					st = res.Msg
				}
				cancel()
			}
			if err != nil {
				failed++
				out.Stores = append(out.Stores, result{URL: url, Error: err.Error()})
				storeRows = append(storeRows, []string{url, "", "unreachable: " + err.Error(), "", "", "", "", "", ""})
				continue
			}
			b, _ := pj.Marshal(st)
			out.Stores = append(out.Stores, result{URL: url, Status: b})
			state := ""
			for _, m := range st.GetMembers() {
				if m.GetId() == st.GetNodeId() {
					state = m.GetState()
				}
			}
			storeRows = append(storeRows, []string{url, st.GetNodeId(), state, st.GetLeaderId(), u(st.GetTerm()),
				u(st.GetCommitIndex()), u(st.GetAppliedIndex()), st.GetClusterId(), d(st.GetGeneration())})
		}
	}
	if a.g.alloc != "" {
		urls, stubs, err := a.allocStubs()
		if err != nil {
			return err
		}
		for i, s := range stubs {
			cctx, cancel := one(ctx)
			res, err := s.Status(cctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
			cancel()
			if err != nil {
				failed++
				out.Allocs = append(out.Allocs, result{URL: urls[i], Error: err.Error()})
				allocRows = append(allocRows, []string{urls[i], "", "unreachable: " + err.Error(), "", "", "", "", "", ""})
				continue
			}
			st := res.Msg
			b, _ := pj.Marshal(st)
			out.Allocs = append(out.Allocs, result{URL: urls[i], Status: b})
			worker := "off"
			if sf := st.GetSnowflake(); sf.GetEnabled() {
				worker = d(sf.GetWorkerId())
				if sf.GetFenced() {
					worker += " (fenced: " + sf.GetReason() + ")"
				}
			}
			lease := "off"
			if sq := st.GetSeq(); sq != nil {
				lease = fmt.Sprintf("%v", sq.GetLeaseValid())
			}
			allocRows = append(allocRows, []string{urls[i], st.GetNodeId(), "serving", worker, lease, fmt.Sprint(len(st.GetTags())),
				st.GetClusterId(), d(st.GetClusterGeneration()), fmt.Sprint(len(st.GetFencedStores()))})
		}
	}
	if a.g.output == "json" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(b))
	} else {
		if storeRows != nil {
			a.tableOut([]string{"STORE", "ID", "STATE", "LEADER", "TERM", "COMMIT", "APPLIED", "CLUSTER_ID", "GENERATION"}, storeRows)
		}
		if allocRows != nil {
			if storeRows != nil {
				fmt.Fprintln(a.stdout)
			}
			// FENCED: store URLs the allocsvr refuses, as another cluster of
			// a generation not above the one it follows.
			a.tableOut([]string{"ALLOC", "ID", "STATE", "WORKER", "SEQ_LEASE", "TAGS", "CLUSTER_ID", "GENERATION", "FENCED"}, allocRows)
		}
	}
	if failed > 0 {
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("%d of the processes asked did not answer", failed))
	}
	return nil
}
