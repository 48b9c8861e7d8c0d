package main

import (
	"net/http"
	"testing"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// An allocsvr with --auth-file keeps its series and its memory flat under
// 10,000 distinct unknown paths without a token, and 10,000 unknown tag
// and space names on the Connect and Leaf APIs, without a token and with
// a client's.
func TestUnknownNamesDoNotGrowAllocsvr(t *testing.T) {
	l := launchtest.StartLimited(t, false, 1)
	a := l.C.Allocs[0]
	base := a.URL()
	launchtest.FloodNames(t, launchtest.NameFlood{Base: base, Pid: a.Pid(), Token: l.Sec.ClientToken,
		Named: []func(name string) *http.Request{
			func(n string) *http.Request {
				return launchtest.PostJSON(base, seqsvrv1connect.AllocServiceNextIDsProcedure, `{"tag":"`+n+`"}`)
			},
			func(n string) *http.Request { return launchtest.Get(base, "/api/segment/get/"+n) },
			func(n string) *http.Request { return launchtest.Get(base, "/api/snowflake/get/"+n) },
			func(n string) *http.Request {
				return launchtest.PostJSON(base, seqsvrv1connect.SeqServiceNextSeqProcedure, `{"space":"`+n+`","key":"1"}`)
			},
			func(n string) *http.Request { return launchtest.Get(base, "/api/seq/next/"+n+"/1") },
		}})
}
