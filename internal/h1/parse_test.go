package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

const connectRequest = "POST /seqsvr.v1.AllocService/NextIDs HTTP/1.1\r\n" +
	"Host: 127.0.0.1:8080\r\n" +
	"User-Agent: connect-go/1.21.1 (go1.26)\r\n" +
	"Content-Length: 7\r\n" +
	"Accept-Encoding: gzip\r\n" +
	"Connect-Protocol-Version: 1\r\n" +
	"Connect-Timeout-Ms: 2000\r\n" +
	"Content-Type: application/proto\r\n" +
	"\r\n" +
	"\n\x05bench"

func TestParse(t *testing.T) {
	withHeader := func(h string) string {
		return strings.Replace(connectRequest, "\r\n\r\n", "\r\n"+h+"\r\n\r\n", 1)
	}
	for name, tc := range map[string]struct {
		in   string
		want reason
	}{
		"connect-go unary":         {connectRequest, served},
		"leaf GET":                 {"GET /api/segment/get/bench HTTP/1.1\r\nHost: x\r\n\r\n", served},
		"no Content-Length":        {"POST /p HTTP/1.1\r\nHost: x\r\n\r\n", served},
		"trailing pipelined bytes": {connectRequest + "GET / HT", served},
		"lowercase names":          {"GET / HTTP/1.1\r\nhost: x\r\nconnection: Close\r\n\r\n", served},
		"head cut short":           {connectRequest[:40], incomplete},
		"body cut short":           {connectRequest[:len(connectRequest)-1], incomplete},
		"empty":                    {"", incomplete},
		"bare LF":                  {"GET / HTTP/1.1\nHost: x\n\n", malformed},
		"HTTP/1.0":                 {"GET / HTTP/1.0\r\nHost: x\r\n\r\n", unsupported},
		"HTTP/2 preface":           {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", unsupported},
		"absolute form":            {"GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", unsupported},
		"query":                    {"GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n", unsupported},
		"no Host":                  {"GET / HTTP/1.1\r\n\r\n", malformed},
		"two Hosts":                {"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", malformed},
		"odd Host":                 {"GET / HTTP/1.1\r\nHost: x/y\r\n\r\n", malformed},
		"chunked":                  {withHeader("Transfer-Encoding: chunked"), unsupported},
		"upgrade":                  {withHeader("Upgrade: h2c"), unsupported},
		"connection upgrade":       {withHeader("Connection: Upgrade"), unsupported},
		"expect":                   {withHeader("Expect: 100-continue"), unsupported},
		"CORS":                     {withHeader("Origin: http://example.com"), unsupported},
		"two lengths":              {withHeader("Content-Length: 7"), unsupported},
		"negative length":          {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", malformed},
		"huge length":              {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9999999999\r\n\r\n", malformed},
		"length over the buffer":   {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\nab", tooLarge},
		"obs-fold":                 {withHeader("X-A: b\r\n c"), malformed},
		"space before colon":       {withHeader("X-A : b"), malformed},
		"no colon":                 {withHeader("X-A"), malformed},
		"control in value":         {withHeader("X-A: b\x01c"), malformed},
		"space in target":          {"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", unsupported},
		"method not a token":       {"GE(T / HTTP/1.1\r\nHost: x\r\n\r\n", malformed},
		"bad escape":               {"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", malformed},
		"short escape":             {"GET /a%2 HTTP/1.1\r\nHost: x\r\n\r\n", malformed},
		"good escape":              {"GET /a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", served},
		"HEAD":                     {"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", unsupported},
		"too many fields":          {"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", maxFields) + "\r\n", tooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			var req Request
			if got := parse([]byte(tc.in), BufferSize, &req); got != tc.want {
				t.Fatalf("parse = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	var req Request
	in := []byte(connectRequest + "GET / HTTP/1.1\r\n")
	if r := parse(in, BufferSize, &req); r != served {
		t.Fatalf("parse = %v", r)
	}
	if string(req.Method) != "POST" || string(req.Path) != "/seqsvr.v1.AllocService/NextIDs" {
		t.Fatalf("method %q path %q", req.Method, req.Path)
	}
	if string(req.Body) != "\n\x05bench" || req.size != len(connectRequest) {
		t.Fatalf("body %q size %d, want %d", req.Body, req.size, len(connectRequest))
	}
	if v, n := req.Header("content-type"); n != 1 || string(v) != "application/proto" {
		t.Fatalf("Content-Type %q x%d", v, n)
	}
	if _, n := req.Header("Content-Encoding"); n != 0 {
		t.Fatalf("Content-Encoding present %d times", n)
	}
	if req.Close {
		t.Fatal("Close set without Connection: close")
	}
}

// FuzzParse checks the front's parser against net/http's: every request
// the front serves, net/http reads to the same method, target, Host,
// Close, header values and body. (The converse is not required: the front
// may leave valid requests to net/http.)
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		connectRequest,
		"GET /api/segment/get/bench HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 3\r\n\r\nabcGET",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: \t b \t\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: \x80\xff\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a%2 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a%2F%c3%A9 HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var req Request
		if parse(in, BufferSize, &req) != served {
			return
		}
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("front serves %q, net/http rejects it: %v", in, err)
		}
		if hr.Method != string(req.Method) || hr.RequestURI != string(req.Path) || hr.ProtoMinor != 1 || hr.ProtoMajor != 1 {
			t.Fatalf("front %q %q, net/http %q %q %s", req.Method, req.Path, hr.Method, hr.RequestURI, hr.Proto)
		}
		if v, _ := req.Header("Host"); hr.Host != string(v) {
			t.Fatalf("Host: front %q, net/http %q", v, hr.Host)
		}
		if hr.Close != req.Close {
			t.Fatalf("Close: front %v, net/http %v", req.Close, hr.Close)
		}
		for _, fl := range req.fields {
			name := http.CanonicalHeaderKey(string(fl.name))
			if name == "Host" || name == "Connection" && hr.Close {
				continue // net/http moves these out of Header
			}
			found := false
			for _, v := range hr.Header.Values(name) {
				found = found || v == string(fl.value)
			}
			if !found {
				t.Fatalf("header %q: front %q, net/http %q", name, fl.value, hr.Header.Values(name))
			}
		}
		if hr.ContentLength != int64(len(req.Body)) && !(hr.ContentLength == 0 && len(req.Body) == 0) {
			t.Fatalf("length: front %d, net/http %d", len(req.Body), hr.ContentLength)
		}
		body, err := io.ReadAll(hr.Body)
		if err != nil || !bytes.Equal(body, req.Body) {
			t.Fatalf("body: front %q, net/http %q (%v)", req.Body, body, err)
		}
	})
}
