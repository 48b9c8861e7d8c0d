package alloc

import (
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
//
// Errors answer a non-200 status with a one-line reason, so a Leaf client,
// which only parses the body of a 200, switches without change.
func (s *Service) LeafRoutes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /api/segment/get/{tag}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ids, err := s.segmentIDs(r.Context(), r.PathValue("tag"), 1)
			writeLeaf(w, ids, err)
		}),
		"GET /api/snowflake/get/{tag}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := spec.CheckTag(r.PathValue("tag")); err != nil {
				writeLeaf(w, nil, err)
				return
			}
			ids, err := s.snowflakeIDs(r.Context(), 1)
			writeLeaf(w, ids, err)
		}),
	}
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
	ids, err := s.segmentIDs(req.Context, string(tag), 1)
	if err != nil || len(ids) != 1 {
		writeLeaf(resp.Writer(), ids, err)
		return true
	}
	resp.SetHeader("Cache-Control", "no-store")
	resp.SetHeader("Content-Type", "text/plain; charset=utf-8")
	resp.Body = strconv.AppendInt(resp.Buf[:0], ids[0], 10)
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

func writeLeaf(w http.ResponseWriter, ids []int64, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err == nil && len(ids) != 1 {
		err = errs.Unavailable
	}
	if err != nil {
		w.WriteHeader(errs.HTTPStatus(err))
		// One line: the reason without embedded newlines.
		msg := strings.ReplaceAll(errs.Message(err), "\n", " ")
		_, _ = w.Write([]byte(msg + "\n"))
		return
	}
	_, _ = w.Write(strconv.AppendInt(nil, ids[0], 10))
}
