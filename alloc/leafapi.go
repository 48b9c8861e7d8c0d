package alloc

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// LeafRoutes returns Meituan Leaf's HTTP API, each route with its
// net/http handler and, for the hot GETs, its HTTP/1.1 front route:
//
//	GET /api/segment/get/{tag}    -> one segment ID, plain decimal, 200
//	GET /api/snowflake/get/{tag}  -> one snowflake ID, plain decimal, 200
//	GET /api/seq/next/{space}/{key}, GET /api/seq/current/{space}/{key}
//	                              -> a per-key sequence value (seqRoutes)
//
// Errors answer a non-200 status with a one-line reason, so a Leaf client,
// which only parses the body of a 200, switches without change.
func (s *Service) LeafRoutes() []routes.Route {
	rs := append([]routes.Route{
		{
			Pattern: "GET /api/segment/get/{tag}",
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				status, body := s.leafSegment(r.Context(), r.PathValue("tag"), nil)
				writeLeaf(w, status, body)
			}),
			Fast: func(req *h1.Request, tag []byte, resp *h1.Response) bool {
				setLeafHeaders(resp.SetHeader)
				resp.Status, resp.Body = s.leafSegment(req.Context, string(tag), resp.Buf[:0])
				return true
			},
			Gated: []any{s.leafSegment, leafResponse, writeLeaf},
		},
		{
			Pattern: "GET /api/snowflake/get/{tag}",
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				status, body := s.leafSnowflake(r.Context(), r.PathValue("tag"))
				writeLeaf(w, status, body)
			}),
			Gated: []any{s.leafSnowflake, writeLeaf},
		},
	}, s.seqRoutes()...)
	// Only GET hands out IDs. ServeMux lets a GET pattern answer HEAD too,
	// which would consume an ID and drop the body; a HEAD pattern is more
	// specific and refuses it. Any other method reaches the path's
	// pattern without a method: left to ServeMux, it would answer 405
	// with "Allow: GET, HEAD", offering the HEAD refused here.
	for _, r := range rs {
		if path, ok := strings.CutPrefix(r.Pattern, http.MethodGet+" "); ok {
			rs = append(rs, routes.Route{Pattern: http.MethodHead + " " + path, Handler: http.HandlerFunc(getOnly), Gated: []any{getOnly}},
				routes.Route{Pattern: path, Handler: http.HandlerFunc(getOnly), Gated: []any{getOnly}})
		}
	}
	return rs
}

// getOnly answers 405 to a method other than GET on a Leaf route.
func getOnly(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", http.MethodGet)
	writeLeaf(w, http.StatusMethodNotAllowed, []byte("only GET hands out IDs\n"))
}

// leafSegment is the answer to GET /api/segment/get/{tag}, for net/http
// and the front alike: the status and the body, appended to buf.
func (s *Service) leafSegment(ctx context.Context, tag string, buf []byte) (int, []byte) {
	ids, err := s.segmentIDs(ctx, tag, 1)
	return leafResponse(ids, err, buf)
}

// leafSnowflake is the answer to GET /api/snowflake/get/{tag}. The tag is
// only checked for form: snowflake IDs are not per tag.
func (s *Service) leafSnowflake(ctx context.Context, tag string) (int, []byte) {
	if err := spec.CheckTag(tag); err != nil {
		return leafResponse(nil, err, nil)
	}
	ids, err := s.snowflakeIDs(ctx, 1)
	return leafResponse(ids, err, nil)
}

// leafResponse is the Leaf API's rule: one ID as a plain decimal with 200,
// else the error's status (errs.HTTPStatus) and its client message on one
// line, so a Leaf client, which only parses the body of a 200, never takes
// an error for an ID.
func leafResponse(ids []int64, err error, buf []byte) (int, []byte) {
	if err == nil && len(ids) != 1 {
		err = errs.Unavailable
	}
	if err != nil {
		buf = append(buf, strings.ReplaceAll(errs.Message(err), "\n", " ")...)
		return errs.HTTPStatus(err), append(buf, '\n')
	}
	return http.StatusOK, strconv.AppendInt(buf, ids[0], 10)
}

// writeLeaf writes a Leaf answer through net/http.
func writeLeaf(w http.ResponseWriter, status int, body []byte) {
	setLeafHeaders(w.Header().Set)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setLeafHeaders sets the headers of every Leaf answer.
func setLeafHeaders(set func(name, value string)) {
	set("Content-Type", "text/plain; charset=utf-8")
	set("Cache-Control", "no-store")
}
