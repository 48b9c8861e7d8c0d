package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func TestRawClientParsesResponses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/len":
			_, _ = w.Write([]byte("12345"))
		case "/chunked":
			_, _ = w.Write([]byte("12"))
			w.(http.Flusher).Flush() // forces chunked encoding
			_, _ = w.Write([]byte("345"))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("7", 10000)))
		default:
			http.Error(w, "nope", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]string{"/len": "12345", "/chunked": "12345", "/big": strings.Repeat("7", 10000)} {
		c, err := newRawClient(srv.URL, "GET", path, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // the connection is kept alive across calls
			status, body, err := c.do()
			if err != nil || status != 200 || string(body) != want {
				t.Fatalf("%s call %d: status %d err %v body %.20q", path, i, status, err, body)
			}
		}
	}
	c, _ := newRawClient(srv.URL, "GET", "/missing", nil, nil, nil)
	if status, _, err := c.do(); err != nil || status != http.StatusNotFound {
		t.Fatalf("missing: status %d err %v", status, err)
	}
}

func TestRawDoersCountOnlyGoodAnswers(t *testing.T) {
	ids := func(n int) []byte {
		m := &seqsvrv1.NextIDsResponse{}
		for i := 0; i < n; i++ {
			m.Ids = append(m.Ids, int64(100+i))
		}
		b, _ := proto.Marshal(m)
		return b
	}
	check := protoIDs(3)
	if n, err := check(ids(3)); err != nil || n != 3 {
		t.Fatalf("3 ids: %d %v", n, err)
	}
	if _, err := check(ids(2)); err == nil {
		t.Fatal("2 ids accepted for count 3")
	}
	dup, _ := proto.Marshal(&seqsvrv1.NextIDsResponse{Ids: []int64{5, 5, 6}})
	if _, err := check(dup); err == nil {
		t.Fatal("repeated id accepted")
	}
	if _, err := check([]byte{0x0a, 0x05, 1}); err == nil {
		t.Fatal("truncated body accepted")
	}
	if _, err := decimalIDs([]byte("12a")); err == nil {
		t.Fatal("non-number accepted")
	}
	if _, err := decimalIDs(nil); err == nil {
		t.Fatal("empty body accepted")
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/proto" || r.ContentLength <= 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write(ids(3))
	}))
	defer srv.Close()
	mk, err := newDoer("alloc-raw", srv.URL, "", "bench", 3, 1, 0, rawSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	do, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := do(context.Background()); err != nil || n != 3 {
		t.Fatalf("alloc-raw: %d %v", n, err)
	}
	mk, _ = newDoer("alloc-raw", srv.URL, "", "bench", 4, 1, 0, rawSecurity{})
	do, _ = mk()
	if _, err := do(context.Background()); err == nil {
		t.Fatal("alloc-raw counted an answer with the wrong number of ids")
	}
}

// seq-raw sends NextSeq for each worker's own keys in turn, spread over
// the space's sections, and counts an answer carrying a value.
func TestSeqRaw(t *testing.T) {
	const keys, sectionSize = 1_000_000, 100_000
	var (
		mu   sync.Mutex
		seen = map[uint64]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req seqsvrv1.NextSeqRequest
		if r.URL.Path != "/seqsvr.v1.SeqService/NextSeq" || proto.Unmarshal(body, &req) != nil || req.Space != "sp" || req.Key >= keys {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[req.Key]++
		mu.Unlock()
		res, _ := proto.Marshal(&seqsvrv1.NextSeqResponse{Seq: 7, RoutingVersion: 3})
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write(res)
	}))
	defer srv.Close()
	mk, err := newDoer("seq-raw", srv.URL, "", "sp", 1, 2, keys, rawSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		do, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		for range 2 * seqKeysPerWorker {
			if n, err := do(context.Background()); err != nil || n != 1 {
				t.Fatalf("seq-raw: %d %v", n, err)
			}
		}
	}
	sections := map[uint64]bool{}
	for k, n := range seen {
		if n != 2 {
			t.Fatalf("key %d sent %d times, want 2 (each worker cycles through its keys)", k, n)
		}
		sections[k/sectionSize] = true
	}
	if len(seen) != 2*seqKeysPerWorker || len(sections) != keys/sectionSize {
		t.Fatalf("%d distinct keys over %d sections, want %d over %d", len(seen), len(sections), 2*seqKeysPerWorker, keys/sectionSize)
	}
	if _, err := newDoer("seq-raw", srv.URL, "", "sp", 1, 1, 0, rawSecurity{}); err == nil {
		t.Fatal("seq-raw without -keys accepted")
	}
}
