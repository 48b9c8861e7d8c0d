package main

import (
	"net/http"
	"testing"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// A storesvr with --auth-file keeps its series and its memory flat under
// 10,000 distinct unknown paths without a token, and 10,000 unknown tag
// and space names, without a token and with a client's.
func TestUnknownNamesDoNotGrowStoresvr(t *testing.T) {
	l := launchtest.StartLimited(t, false, 0)
	s := l.C.Stores[0]
	base := s.URL()
	launchtest.FloodNames(t, launchtest.NameFlood{Base: base, Pid: s.Pid(), Token: l.Sec.ClientToken,
		Named: []func(name string) *http.Request{
			func(n string) *http.Request {
				return launchtest.PostJSON(base, seqsvrv1connect.StoreServiceGetTagProcedure, `{"tag":"`+n+`"}`)
			},
			func(n string) *http.Request {
				return launchtest.PostJSON(base, seqsvrv1connect.StoreServiceGetSpaceProcedure, `{"space":"`+n+`"}`)
			},
			func(n string) *http.Request {
				return launchtest.PostJSON(base, seqsvrv1connect.StoreServiceReserveSegmentProcedure, `{"tag":"`+n+`"}`)
			},
		}})
}
