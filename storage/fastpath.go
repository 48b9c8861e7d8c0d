package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// ReserveFastPath serves the store's hot call, a Connect-protocol unary
// ReserveSegment with the binary proto codec, on the leader without
// connect-go's generic machinery, and hands every other request to next
// (the connect-go handler of s.Service()). Under load connect-go's per-call
// work was a fifth of the leader's CPU (pprof), and at high concurrency the
// leader is CPU-bound.
//
// Only a request connect-go would answer exactly the same way takes it:
// POST, Content-Type application/proto, no Content-Encoding, no
// Connect-Timeout-Ms, protocol version absent or 1, a known Content-Length
// within maxBodyBytes. The answer is the one the service gives: the same
// validation, the same propose, the same error codes. When this member is
// not the leader, nothing has been proposed (ErrNotLeader), and the request
// goes to next with its body restored, which forwards it as usual.
func (s *Store) ReserveFastPath(next http.Handler, maxBodyBytes int64, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != seqsvrv1connect.StoreServiceReserveSegmentProcedure || !fastEligible(r, maxBodyBytes) {
			next.ServeHTTP(w, r)
			return
		}
		defer func() {
			if p := recover(); p != nil {
				logger.ErrorContext(r.Context(), "panic in handler", "procedure", r.URL.Path, "panic", fmt.Sprint(p))
				_ = errw.Write(w, r, connect.NewError(connect.CodeInternal, errors.New("internal error")))
			}
		}()
		bp := fastBufs.Get().(*[]byte)
		defer fastBufs.Put(bp)
		n := int(r.ContentLength)
		if cap(*bp) < n {
			*bp = make([]byte, n)
		}
		buf := (*bp)[:n]
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			_ = errw.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read message: %w", err)))
			return
		}
		var req seqsvrv1.ReserveSegmentRequest
		if err := proto.Unmarshal(buf, &req); err != nil {
			_ = errw.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unmarshal message: %w", err)))
			return
		}
		seg, err := s.reserveSegment(r.Context(), &req)
		if errors.Is(err, ErrNotLeader) {
			// Nothing was proposed: let the service forward it.
			r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(buf)))
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			_ = errw.Write(w, r, ConnectError(err))
			return
		}
		out, err := proto.MarshalOptions{}.MarshalAppend(buf[:0], seg)
		if err != nil {
			_ = errw.Write(w, r, connect.NewError(connect.CodeInternal, fmt.Errorf("marshal message: %w", err)))
			return
		}
		*bp = out
		h := w.Header()
		h["Content-Type"] = protoContentType
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
		_, _ = w.Write(out)
	})
}

var (
	protoContentType = []string{"application/proto"}
	fastBufs         = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
)

func fastEligible(r *http.Request, maxBodyBytes int64) bool {
	h := r.Header
	if r.Method != http.MethodPost || r.ContentLength < 0 || r.ContentLength > maxBodyBytes {
		return false
	}
	if ct := h["Content-Type"]; len(ct) != 1 || ct[0] != "application/proto" {
		return false
	}
	if v := h["Connect-Protocol-Version"]; len(v) > 1 || len(v) == 1 && v[0] != "1" {
		return false
	}
	return len(h["Content-Encoding"]) == 0 && len(h["Connect-Timeout-Ms"]) == 0
}
