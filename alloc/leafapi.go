package alloc

import (
	"context"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// LeafRoutes returns Meituan Leaf's HTTP API as ServeMux patterns:
//
//	GET /api/segment/get/{tag}    -> one segment ID, plain decimal, 200
//	GET /api/snowflake/get/{tag}  -> one snowflake ID, plain decimal, 200
//	GET /api/seq/next/{space}/{key}, GET /api/seq/current/{space}/{key}
//	                              -> a per-key sequence value (seqRoutes)
//
// Errors answer a non-200 status with a one-line reason, so a Leaf client,
// which only parses the body of a 200, switches without change.
func (s *Service) LeafRoutes() map[string]http.Handler {
	routes := map[string]http.Handler{
		"GET /api/segment/get/{tag}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, body := s.leafSegment(r.Context(), r.PathValue("tag"), nil)
			writeLeaf(w, status, body)
		}),
		"GET /api/snowflake/get/{tag}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, body := s.leafSnowflake(r.Context(), r.PathValue("tag"))
			writeLeaf(w, status, body)
		}),
	}
	maps.Copy(routes, s.seqRoutes())
	return routes
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

const leafSegmentPrefix = "/api/segment/get/"

// leafSegmentH1 is GET /api/segment/get/{tag} for the HTTP/1.1 front. A
// tag with anything but unreserved characters (percent-escapes, slashes,
// dot segments) is declined: net/http's mux decodes and cleans those, and
// its answer is the reference.
func (s *Service) leafSegmentH1(req *h1.Request, resp *h1.Response) bool {
	if string(req.Method) != http.MethodGet || len(req.Body) != 0 {
		return false // a GET with a body gets net/http's body limit
	}
	tag := req.Path[len(leafSegmentPrefix):]
	if !unreservedSegment(tag) {
		return false
	}
	setLeafHeaders(resp.SetHeader)
	resp.Status, resp.Body = s.leafSegment(req.Context, string(tag), resp.Buf[:0])
	return true
}

// unreservedSegment reports whether b is one path segment of RFC 3986
// unreserved characters, other than "." and "..".
func unreservedSegment(b []byte) bool {
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}
