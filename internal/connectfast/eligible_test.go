package connectfast

import (
	"net/textproto"
	"testing"
	"time"
)

// fakeHeaders answers Header as h1.Request does, from a map.
type fakeHeaders map[string][]string

func (f fakeHeaders) Header(name string) ([]byte, int) {
	v := f[textproto.CanonicalMIMEHeaderKey(name)]
	if len(v) == 0 {
		return nil, 0
	}
	return []byte(v[0]), len(v)
}

func TestEligible(t *testing.T) {
	type req struct {
		method string
		body   int
		h      fakeHeaders
	}
	for name, tc := range map[string]struct {
		edit    func(*req)
		want    bool
		timeout time.Duration
	}{
		"binary unary":          {edit: func(*req) {}, want: true},
		"no protocol version":   {edit: func(r *req) { delete(r.h, "Connect-Protocol-Version") }, want: true},
		"body at the limit":     {edit: func(r *req) { r.body = 64 }, want: true},
		"body over the limit":   {edit: func(r *req) { r.body = 65 }},
		"empty body":            {edit: func(r *req) { r.body = 0 }, want: true},
		"GET":                   {edit: func(r *req) { r.method = "GET" }},
		"lower-case post":       {edit: func(r *req) { r.method = "post" }},
		"json":                  {edit: func(r *req) { r.h["Content-Type"] = []string{"application/json"} }},
		"grpc":                  {edit: func(r *req) { r.h["Content-Type"] = []string{"application/grpc"} }},
		"two content types":     {edit: func(r *req) { r.h["Content-Type"] = []string{"application/proto", "application/proto"} }},
		"no content type":       {edit: func(r *req) { delete(r.h, "Content-Type") }},
		"protocol version 2":    {edit: func(r *req) { r.h["Connect-Protocol-Version"] = []string{"2"} }},
		"two versions":          {edit: func(r *req) { r.h["Connect-Protocol-Version"] = []string{"1", "1"} }},
		"compressed":            {edit: func(r *req) { r.h["Content-Encoding"] = []string{"gzip"} }},
		"identity encoding":     {edit: func(r *req) { r.h["Content-Encoding"] = []string{"identity"} }},
		"deadline":              {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"100"} }, want: true, timeout: 100 * time.Millisecond},
		"deadline of 0":         {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"0"} }, want: true},
		"deadline of 10 digits": {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"9999999999"} }, want: true, timeout: 9999999999 * time.Millisecond},
		"deadline of 11 digits": {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"99999999999"} }},
		"malformed deadline":    {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"1s"} }},
		"negative deadline":     {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"-5"} }},
		"empty deadline":        {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{""} }},
		"two deadlines":         {edit: func(r *req) { r.h["Connect-Timeout-Ms"] = []string{"1", "2"} }},
	} {
		r := req{method: "POST", body: 10, h: fakeHeaders{
			"Content-Type":             {"application/proto"},
			"Connect-Protocol-Version": {"1"},
		}}
		tc.edit(&r)
		d, has, ok := eligible([]byte(r.method), r.body, r.h, 64)
		_, wantHas := r.h["Connect-Timeout-Ms"]
		if ok != tc.want || ok && (d != tc.timeout || has != wantHas) {
			t.Errorf("%s: eligible = %v, %v, %v; want %v, %v, %v", name, d, has, ok, tc.timeout, wantHas, tc.want)
		}
	}
}
