package main

import (
	"context"
	"flag"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

type runFunc = func(a *app, ctx context.Context, args []string) error

func noFlags(run runFunc) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc { return run }
}

var tagHeader = []string{"TAG", "MAX_ID", "STEP", "DESCRIPTION", "UPDATED"}

func tagRow(t *seqsvrv1.Tag) []string {
	return []string{t.GetTag(), d(t.GetMaxId()), d(t.GetStep()), t.GetDescription(), ts(t.GetUpdateTime())}
}

var spaceHeader = []string{"SPACE", "KEYS", "SECTION_SIZE", "SECTIONS", "STEP", "DESCRIPTION", "CREATED"}

func spaceRow(s *seqsvrv1.Space) []string {
	return []string{s.GetSpace(), u(s.GetKeyCount()), u(s.GetSectionSize()), u(s.GetSectionCount()), d(s.GetStep()),
		s.GetDescription(), ts(s.GetCreateTime())}
}

// storeOne calls one store RPC and prints its answer.
func storeOne[Req, Res any](a *app, ctx context.Context, rpc func(seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error),
	req *Req) (*Res, error) {
	var res *Res
	method := "call"
	if m, ok := any(req).(proto.Message); ok {
		method = strings.TrimSuffix(string(m.ProtoReflect().Descriptor().Name()), "Request")
	}
	err := a.store(ctx, method, func(ctx context.Context, s seqsvrv1connect.StoreServiceClient) error {
		r, err := rpc(s)(ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		res = r.Msg
		return nil
	})
	return res, err
}

func parseInt(what, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, usagef("%s %q is not an integer", what, s)
	}
	return n, nil
}

func parseUint(what, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, usagef("%s %q is not a non-negative integer", what, s)
	}
	return n, nil
}

func init() {
	commands = append(commands,
		command{path: "tag create", args: "TAG", summary: "create a tag (IDs begin at start+1)", min: 1, max: 1,
			setup: func(fs *flag.FlagSet) runFunc {
				start := fs.Int64("start", 0, "IDs begin after this")
				step := fs.Int64("step", 0, "segment size (0: the store's default, 1000)")
				desc := fs.String("description", "", "free text")
				return func(a *app, ctx context.Context, args []string) error {
					t, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.CreateTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
						return s.CreateTag
					}, &seqsvrv1.CreateTagRequest{Tag: args[0], Start: *start, Step: *step, Description: *desc})
					if err != nil {
						return err
					}
					return a.out(t, tagHeader, [][]string{tagRow(t)})
				}
			}},
		command{path: "tag get", args: "TAG", summary: "show a tag (linearizable read)", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				t, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
					return s.GetTag
				}, &seqsvrv1.GetTagRequest{Tag: args[0]})
				if err != nil {
					return err
				}
				return a.out(t, tagHeader, [][]string{tagRow(t)})
			})},
		command{path: "tag list", args: "", summary: "list every tag", min: 0, max: 0,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				all := &seqsvrv1.ListTagsResponse{}
				for {
					res, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.ListTagsRequest]) (*connect.Response[seqsvrv1.ListTagsResponse], error) {
						return s.ListTags
					}, &seqsvrv1.ListTagsRequest{PageSize: 1000, PageToken: all.NextPageToken})
					if err != nil {
						return err
					}
					all.Tags, all.NextPageToken = append(all.Tags, res.GetTags()...), res.GetNextPageToken()
					if all.NextPageToken == "" {
						break
					}
				}
				var rows [][]string
				for _, t := range all.Tags {
					rows = append(rows, tagRow(t))
				}
				return a.out(all, tagHeader, rows)
			})},
		command{path: "tag update", args: "TAG", summary: "change a tag's step or description", min: 1, max: 1,
			setup: func(fs *flag.FlagSet) runFunc {
				step := fs.Int64("step", 0, "new segment size (0: unchanged)")
				desc := fs.String("description", "", "new description (unchanged unless given)")
				return func(a *app, ctx context.Context, args []string) error {
					req := &seqsvrv1.UpdateTagRequest{Tag: args[0], Step: *step}
					fs.Visit(func(f *flag.Flag) {
						if f.Name == "description" {
							req.Description = desc
						}
					})
					t, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.UpdateTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
						return s.UpdateTag
					}, req)
					if err != nil {
						return err
					}
					return a.out(t, tagHeader, [][]string{tagRow(t)})
				}
			}},
		command{path: "tag delete", args: "TAG", summary: "delete a tag (a re-created tag continues above its max_id)", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				res, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.DeleteTagRequest]) (*connect.Response[seqsvrv1.DeleteTagResponse], error) {
					return s.DeleteTag
				}, &seqsvrv1.DeleteTagRequest{Tag: args[0]})
				if err != nil {
					return err
				}
				return a.out(res, []string{"DELETED"}, [][]string{{args[0]}})
			})},
		command{path: "space create", args: "SPACE", summary: "create a per-key sequence space", min: 1, max: 1,
			setup: func(fs *flag.FlagSet) runFunc {
				keys := fs.Uint64("key-count", 0, "keys 0..N-1 (0: 2^32)")
				section := fs.Uint64("section-size", 0, "keys per section (0: 100000)")
				step := fs.Int64("step", 0, "how far one raise moves a section's max_seq (0: 10000)")
				desc := fs.String("description", "", "free text")
				return func(a *app, ctx context.Context, args []string) error {
					s, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.CreateSpaceRequest]) (*connect.Response[seqsvrv1.Space], error) {
						return s.CreateSpace
					}, &seqsvrv1.CreateSpaceRequest{Space: args[0], KeyCount: *keys, SectionSize: *section, Step: *step, Description: *desc})
					if err != nil {
						return err
					}
					return a.out(s, spaceHeader, [][]string{spaceRow(s)})
				}
			}},
		command{path: "space get", args: "SPACE", summary: "show a space", min: 1, max: 1,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				s, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.GetSpaceRequest]) (*connect.Response[seqsvrv1.Space], error) {
					return s.GetSpace
				}, &seqsvrv1.GetSpaceRequest{Space: args[0]})
				if err != nil {
					return err
				}
				return a.out(s, spaceHeader, [][]string{spaceRow(s)})
			})},
		command{path: "space list", args: "", summary: "list every space", min: 0, max: 0,
			setup: noFlags(func(a *app, ctx context.Context, args []string) error {
				all := &seqsvrv1.ListSpacesResponse{}
				for {
					res, err := storeOne(a, ctx, func(s seqsvrv1connect.StoreServiceClient) func(context.Context, *connect.Request[seqsvrv1.ListSpacesRequest]) (*connect.Response[seqsvrv1.ListSpacesResponse], error) {
						return s.ListSpaces
					}, &seqsvrv1.ListSpacesRequest{PageSize: 1000, PageToken: all.NextPageToken})
					if err != nil {
						return err
					}
					all.Spaces, all.NextPageToken = append(all.Spaces, res.GetSpaces()...), res.GetNextPageToken()
					if all.NextPageToken == "" {
						break
					}
				}
				var rows [][]string
				for _, s := range all.Spaces {
					rows = append(rows, spaceRow(s))
				}
				return a.out(all, spaceHeader, rows)
			})},
	)
}
