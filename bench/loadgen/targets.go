package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// newDoer returns a factory that gives each worker its doer. Go-client
// targets share one client (it pools connections itself); raw targets get
// one connection per worker.
// sec applies to the raw targets only.
func newDoer(target, base, addr, tag string, count, conc int, keys uint64, sec rawSecurity) (func() (doer, error), error) {
	if (sec.token != "" || sec.tls != nil) && !strings.HasSuffix(target, "-raw") {
		return nil, fmt.Errorf("-token, -tls-ca and -insecure apply to the raw targets only, not %q", target)
	}
	shared := func(d doer) func() (doer, error) { return func() (doer, error) { return d, nil } }
	switch target {
	case "alloc-connect":
		c := seqsvrv1connect.NewAllocServiceClient(http1Client(conc), base)
		return shared(allocDoer(c, tag, count)), nil
	case "alloc-grpc":
		c := seqsvrv1connect.NewAllocServiceClient(h2cClient(), base, connect.WithGRPC())
		return shared(allocDoer(c, tag, count)), nil
	case "store-reserve":
		c := seqsvrv1connect.NewStoreServiceClient(http1Client(conc), base)
		return shared(func(ctx context.Context) (int, error) {
			res, err := c.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: int64(count)}))
			if err != nil {
				return 0, err
			}
			return int(res.Msg.Last - res.Msg.First + 1), nil
		}), nil
	case "http":
		hc := http1Client(conc)
		return shared(func(ctx context.Context) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
			resp, err := hc.Do(req)
			if err != nil {
				return 0, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return 0, fmt.Errorf("status %d", resp.StatusCode)
			}
			return 1, nil
		}), nil
	case "redis":
		return func() (doer, error) { return redisDoer(addr, count), nil }, nil
	case "http-raw":
		return rawFactory(base, "GET", "", sec.headers(nil), sec.tls, nil, decimalIDs), nil
	case "leaf-raw":
		return rawFactory(base, "GET", "/api/segment/get/"+tag, sec.headers(nil), sec.tls, nil, decimalIDs), nil
	case "alloc-raw":
		body, err := proto.Marshal(&seqsvrv1.NextIDsRequest{Tag: tag, Count: int32(count)})
		if err != nil {
			return nil, err
		}
		return rawFactory(base, "POST", "/"+seqsvrv1connect.AllocServiceName+"/NextIDs", sec.headers(connectHeaders), sec.tls, body, protoIDs(count)), nil
	case "alloc-json-raw":
		// Connect JSON, as curl or a non-Go client sends it: answered by
		// net/http and connect-go (the front answers only binary).
		body := fmt.Appendf(nil, `{"tag":%q,"count":%d}`, tag, count)
		return rawFactory(base, "POST", "/"+seqsvrv1connect.AllocServiceName+"/NextIDs", sec.headers(connectJSONHeaders), sec.tls, body, jsonIDs(count)), nil
	case "store-raw":
		body, err := proto.Marshal(&seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: int64(count)})
		if err != nil {
			return nil, err
		}
		return rawFactory(base, "POST", "/"+seqsvrv1connect.StoreServiceName+"/ReserveSegment", sec.headers(connectHeaders), sec.tls, body, segmentIDs(count)), nil
	case "seq-raw":
		if keys == 0 {
			return nil, errors.New("seq-raw needs -keys > 0")
		}
		// NextSeqResponse carries the value as field 1, like NextIDsResponse's ids.
		return rawWorkers(base, "POST", "/"+seqsvrv1connect.SeqServiceName+"/NextSeq", sec.headers(connectHeaders), sec.tls,
			func(w int) ([][]byte, error) { return seqBodies(tag, keys, w) }, protoIDs(1)), nil
	}
	return nil, fmt.Errorf("unknown -target %q", target)
}

// connectHeaders make a Connect-protocol unary call with the binary proto
// codec. No Accept-Encoding: responses come back uncompressed, as they do
// for the Redis and bare-HTTP references.
var connectHeaders = map[string]string{
	"Content-Type":             "application/proto",
	"Connect-Protocol-Version": "1",
}

// rawSecurity is what the raw targets add for a server with access
// control or TLS: a bearer token in every prepared request, and the TLS
// configuration of their connections (nil: plain TCP).
type rawSecurity struct {
	token string
	tls   *tls.Config
}

// headers is h plus the Authorization header when there is a token (h
// itself is not changed).
func (s rawSecurity) headers(h map[string]string) map[string]string {
	if s.token == "" {
		return h
	}
	out := map[string]string{"Authorization": "Bearer " + s.token}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// rawFactory builds one raw connection per worker, each sending body on
// every call; check turns a 200 body into the number of IDs it carries, or
// an error when it is malformed.
func rawFactory(base, method, path string, headers map[string]string, tlsCfg *tls.Config, body []byte, check func([]byte) (int, error)) func() (doer, error) {
	return rawWorkers(base, method, path, headers, tlsCfg, func(int) ([][]byte, error) { return [][]byte{body}, nil }, check)
}

// rawWorkers is rawFactory with bodies of its own for each worker
// (numbered from 0), sent in turn.
func rawWorkers(base, method, path string, headers map[string]string, tlsCfg *tls.Config, bodies func(worker int) ([][]byte, error), check func([]byte) (int, error)) func() (doer, error) {
	worker := 0
	return func() (doer, error) {
		bs, err := bodies(worker)
		if err != nil {
			return nil, err
		}
		worker++
		c, err := newRawClient(base, method, path, headers, tlsCfg, bs...)
		if err != nil {
			return nil, err
		}
		return func(context.Context) (int, error) {
			status, b, err := c.do()
			if err != nil && !errors.Is(err, errServerClosed) {
				return 0, err
			}
			if status != http.StatusOK {
				return 0, fmt.Errorf("status %d: %.200s", status, b)
			}
			return check(b)
		}, nil
	}
}

// seqKeysPerWorker is how many keys each seq-raw worker cycles through.
const seqKeysPerWorker = 64

// seqBodies are worker w's NextSeq requests: seqKeysPerWorker keys of
// 0..keys-1, scattered by a multiplicative hash so the workers' keys
// spread over every section of the space rather than crowding the first.
func seqBodies(space string, keys uint64, w int) ([][]byte, error) {
	out := make([][]byte, seqKeysPerWorker)
	for j := range out {
		i := uint64(w*seqKeysPerWorker + j)
		key := (i * 0x9E3779B97F4A7C15) % keys
		b, err := proto.Marshal(&seqsvrv1.NextSeqRequest{Space: space, Key: key})
		if err != nil {
			return nil, err
		}
		out[j] = b
	}
	return out, nil
}

// decimalIDs accepts a Leaf-style body: one positive decimal number.
func decimalIDs(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errors.New("empty body")
	}
	var n int64
	for _, ch := range b {
		if ch < '0' || ch > '9' || n > (1<<63-1-9)/10 {
			return 0, fmt.Errorf("body %.40q is not an ID", b)
		}
		n = n*10 + int64(ch-'0')
	}
	return 1, nil
}

// connectJSONHeaders make a Connect-protocol unary call with the JSON codec.
var connectJSONHeaders = map[string]string{
	"Content-Type":             "application/json",
	"Connect-Protocol-Version": "1",
}

// jsonIDs decodes NextIDsResponse as protojson writes it ({"ids":["1",...]})
// and accepts it only with exactly want strictly increasing IDs.
func jsonIDs(want int) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		var res seqsvrv1.NextIDsResponse
		if err := protojson.Unmarshal(b, &res); err != nil {
			return 0, err
		}
		ids := res.GetIds()
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				return 0, fmt.Errorf("ids not increasing: %d after %d", ids[i], ids[i-1])
			}
		}
		if len(ids) != want {
			return 0, fmt.Errorf("%d ids, want %d", len(ids), want)
		}
		return want, nil
	}
}

// protoIDs decodes NextIDsResponse.ids (field 1, packed or not) and
// accepts it only with exactly want strictly increasing IDs.
func protoIDs(want int) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		n, prev := 0, int64(-1<<63)
		// add consumes one varint ID from the front of b.
		add := func(b []byte) ([]byte, error) {
			v, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return nil, protowire.ParseError(l)
			}
			id := int64(v)
			if n > 0 && id <= prev {
				return nil, fmt.Errorf("ids not increasing: %d after %d", id, prev)
			}
			prev = id
			n++
			return b[l:], nil
		}
		for len(b) > 0 {
			num, typ, l := protowire.ConsumeTag(b)
			if l < 0 {
				return 0, protowire.ParseError(l)
			}
			b = b[l:]
			switch {
			case num == 1 && typ == protowire.BytesType:
				packed, l := protowire.ConsumeBytes(b)
				if l < 0 {
					return 0, protowire.ParseError(l)
				}
				b = b[l:]
				for len(packed) > 0 {
					var err error
					if packed, err = add(packed); err != nil {
						return 0, err
					}
				}
			case num == 1 && typ == protowire.VarintType:
				var err error
				if b, err = add(b); err != nil {
					return 0, err
				}
			default:
				l := protowire.ConsumeFieldValue(num, typ, b)
				if l < 0 {
					return 0, protowire.ParseError(l)
				}
				b = b[l:]
			}
		}
		if n != want {
			return 0, fmt.Errorf("got %d ids, want %d", n, want)
		}
		return n, nil
	}
}

// segmentIDs decodes a Segment and accepts it only when it spans want IDs.
func segmentIDs(want int) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		var seg seqsvrv1.Segment
		if err := proto.Unmarshal(b, &seg); err != nil {
			return 0, err
		}
		if n := seg.GetLast() - seg.GetFirst() + 1; seg.GetFirst() <= 0 || n != int64(want) {
			return 0, fmt.Errorf("segment [%d,%d] does not hold %d ids", seg.GetFirst(), seg.GetLast(), want)
		}
		return want, nil
	}
}

func allocDoer(c seqsvrv1connect.AllocServiceClient, tag string, count int) doer {
	return func(ctx context.Context) (int, error) {
		res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: int32(count)}))
		if err != nil {
			return 0, err
		}
		if len(res.Msg.Ids) != count {
			return 0, fmt.Errorf("got %d ids, want %d", len(res.Msg.Ids), count)
		}
		return count, nil
	}
}

// http1Client keeps one idle connection per worker so HTTP/1.1 targets are
// compared on equal terms.
func http1Client(conc int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conc * 2,
		MaxIdleConnsPerHost: conc * 2,
		IdleConnTimeout:     time.Minute,
	}}
}

func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p, TLSClientConfig: &tls.Config{}}}
}

// redisDoer sends INCR (count 1) or INCRBY count over RESP on its own
// connection (one per worker), no pipelining: the same one-request-one-answer
// shape as the ID service calls. INCRBY count reserves count IDs, as a
// NextIDs call of count does.
func redisDoer(addr string, count int) doer {
	var (
		c net.Conn
		r *bufio.Reader
	)
	cmd := []byte("*2\r\n$4\r\nINCR\r\n$5\r\nbench\r\n")
	if count > 1 {
		n := strconv.Itoa(count)
		cmd = []byte(fmt.Sprintf("*3\r\n$6\r\nINCRBY\r\n$5\r\nbench\r\n$%d\r\n%s\r\n", len(n), n))
	} else {
		count = 1
	}
	fail := func(err error) (int, error) {
		if c != nil {
			c.Close()
			c = nil
		}
		return 0, err
	}
	return func(context.Context) (int, error) {
		if c == nil {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return 0, err
			}
			c, r = conn, bufio.NewReader(conn)
		}
		if _, err := c.Write(cmd); err != nil {
			return fail(err)
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fail(err)
		}
		if len(line) < 4 || line[0] != ':' {
			return fail(errors.New("redis: " + strings.TrimSpace(string(line))))
		}
		if _, err := decimalIDs(bytes.TrimRight(line[1:], "\r\n")); err != nil {
			return fail(err)
		}
		return count, nil
	}
}
