package alloc

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// NextIDsFastPath serves the commonest call, a Connect-protocol unary
// NextIDs with the binary proto codec, without connect-go's generic
// machinery, and hands every other request to next (the connect-go handler
// of the same Service). Under load connect-go's per-call work (codec and
// compression negotiation, header building, interceptor chain) was about a
// fifth of the allocsvr's CPU (pprof), as much as the rest of the HTTP
// stack.
//
// Only a request connect-go would answer exactly the same way takes the
// fast path: POST, Content-Type application/proto, no Content-Encoding, no
// Connect-Timeout-Ms (connect-go turns it into a deadline), protocol
// version absent or 1, and a known Content-Length within maxBodyBytes.
// Answers are the same bytes a connect-go server sends (the packed ids, or
// the Connect JSON error with the contract's code), so clients cannot tell
// the two apart; the tests check that with connect-go clients.
func (s *Service) NextIDsFastPath(next http.Handler, maxBodyBytes int64, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != seqsvrv1connect.AllocServiceNextIDsProcedure || !fastEligible(r, maxBodyBytes) {
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
		buf := (*bp)[:0]
		n := int(r.ContentLength)
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			_ = errw.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read message: %w", err)))
			return
		}
		var req seqsvrv1.NextIDsRequest
		if err := proto.Unmarshal(buf, &req); err != nil {
			_ = errw.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unmarshal message: %w", err)))
			return
		}
		ids, err := s.segmentIDs(r.Context(), req.GetTag(), req.GetCount())
		if err != nil {
			_ = errw.Write(w, r, ConnectError(err))
			return
		}
		buf = appendIDs(buf[:0], ids)
		*bp = buf
		h := w.Header()
		h["Content-Type"] = protoContentType
		h["Content-Length"] = []string{strconv.Itoa(len(buf))}
		_, _ = w.Write(buf)
	})
}

var (
	protoContentType = []string{"application/proto"}
	fastBufs         = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
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

// appendIDs is NextIDsResponse{Ids: ids} in the proto wire format: field 1,
// packed varints, as proto.Marshal writes it. It is written out by hand
// because for count=1000 protowire's general AppendVarint and SizeVarint
// were a fifth of the allocsvr's CPU (pprof).
func appendIDs(b []byte, ids []int64) []byte {
	if len(ids) == 0 {
		return b
	}
	// IDs come strictly increasing, so when the first and the last have
	// the same varint length every one between has it too: the common
	// case, encoded with the length known up front.
	if first, last := ids[0], ids[len(ids)-1]; first >= 0 && first <= last && sorted(ids) {
		if l := varintLen(uint64(first)); l == varintLen(uint64(last)) {
			return appendFixed(b, ids, l)
		}
	}
	size := 0
	for _, id := range ids {
		size += varintLen(uint64(id))
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	i := len(b)
	b = slices.Grow(b, size)[:i+size]
	for _, id := range ids {
		v := uint64(id)
		for v >= 0x80 {
			b[i] = byte(v) | 0x80
			v >>= 7
			i++
		}
		b[i] = byte(v)
		i++
	}
	return b
}

// appendFixed encodes ids that all take l bytes as varints.
func appendFixed(b []byte, ids []int64, l int) []byte {
	size := len(ids) * l
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	i := len(b)
	b = slices.Grow(b, size)[:i+size]
	out := b[i:]
	switch l {
	case 3:
		for k, id := range ids {
			v, o := uint64(id), out[3*k:3*k+3]
			o[0], o[1], o[2] = byte(v)|0x80, byte(v>>7)|0x80, byte(v>>14)
		}
	case 4:
		for k, id := range ids {
			v, o := uint64(id), out[4*k:4*k+4]
			o[0], o[1], o[2], o[3] = byte(v)|0x80, byte(v>>7)|0x80, byte(v>>14)|0x80, byte(v>>21)
		}
	case 5:
		for k, id := range ids {
			v, o := uint64(id), out[5*k:5*k+5]
			o[0], o[1], o[2], o[3], o[4] = byte(v)|0x80, byte(v>>7)|0x80, byte(v>>14)|0x80, byte(v>>21)|0x80, byte(v>>28)
		}
	default:
		for k, id := range ids {
			v, o := uint64(id), out[l*k:l*k+l]
			for j := 0; j < l-1; j++ {
				o[j] = byte(v) | 0x80
				v >>= 7
			}
			o[l-1] = byte(v)
		}
	}
	return b
}

// sorted reports whether ids never decrease; cheaper than sizing them one
// by one and it keeps appendIDs right for any input.
func sorted(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] < ids[i-1] {
			return false
		}
	}
	return true
}

func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
