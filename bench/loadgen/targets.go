package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

func newDoer(target, url, addr, tag string, count, conc int) (doer, error) {
	switch target {
	case "alloc-connect":
		c := seqsvrv1connect.NewAllocServiceClient(http1Client(conc), url)
		return allocDoer(c, tag, count), nil
	case "alloc-grpc":
		c := seqsvrv1connect.NewAllocServiceClient(h2cClient(), url, connect.WithGRPC())
		return allocDoer(c, tag, count), nil
	case "store-reserve":
		c := seqsvrv1connect.NewStoreServiceClient(http1Client(conc), url)
		return func(ctx context.Context) (int, error) {
			res, err := c.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: int64(count)}))
			if err != nil {
				return 0, err
			}
			return int(res.Msg.Last - res.Msg.First + 1), nil
		}, nil
	case "http":
		hc := http1Client(conc)
		return func(ctx context.Context) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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
		}, nil
	case "redis":
		return redisDoer(addr), nil
	}
	return nil, fmt.Errorf("unknown -target %q", target)
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

// redisDoer sends INCR over RESP, one connection per worker, no pipelining:
// the same one-request-one-answer shape as the ID service calls.
func redisDoer(addr string) doer {
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	pool := sync.Pool{}
	cmd := []byte("*2\r\n$4\r\nINCR\r\n$5\r\nbench\r\n")
	return func(ctx context.Context) (int, error) {
		cn, _ := pool.Get().(*conn)
		if cn == nil {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return 0, err
			}
			cn = &conn{c: c, r: bufio.NewReader(c)}
		}
		if _, err := cn.c.Write(cmd); err != nil {
			cn.c.Close()
			return 0, err
		}
		line, err := cn.r.ReadString('\n')
		if err != nil {
			cn.c.Close()
			return 0, err
		}
		if !strings.HasPrefix(line, ":") {
			cn.c.Close()
			return 0, errors.New("redis: " + strings.TrimSpace(line))
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64); err != nil {
			cn.c.Close()
			return 0, err
		}
		pool.Put(cn)
		return 1, nil
	}
}
