package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ssPods is the StatefulSet's pods as runStatefulSet runs them, by
// ordinal: each one's container and API on the host, and start, which
// runs pod ord as the manifest writes it in a new container on a new,
// empty volume (a pod on a new PVC: same hostname, same args).
type ssPods struct {
	t     *testing.T
	e     *engine
	name  string // the StatefulSet's: pod N's hostname and node ID are name-N
	names map[int]string
	urls  map[int]string
	start func(ord int)
}

type ssSegment struct{ First, Last string }

// bounds is the segment's first and last ID.
func (s ssSegment) bounds(t *testing.T) (first, last uint64) {
	t.Helper()
	f, err1 := strconv.ParseUint(s.First, 10, 64)
	l, err2 := strconv.ParseUint(s.Last, 10, 64)
	if err1 != nil || err2 != nil || f == 0 || l < f {
		t.Fatalf("segment %+v", s)
	}
	return f, l
}

type ssStatus struct {
	LeaderID string `json:"leaderId"`
	Members  []struct{ ID, Suffrage string }
}

func (s ssStatus) voters() int {
	n := 0
	for _, m := range s.Members {
		if m.Suffrage == "voter" {
			n++
		}
	}
	return n
}

// call posts body to procedure through pod ord once, and decodes an OK
// answer into out.
func (p *ssPods) call(ctx context.Context, ord int, procedure, body string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.urls[ord]+"/seqsvr.v1.StoreService/"+procedure, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", res.Status, b)
	}
	return json.Unmarshal(b, out)
}

// readyz is pod ord's /readyz: its status code and body.
func (p *ssPods) readyz(ctx context.Context, ord int) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.urls[ord]+"/readyz", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// until polls cond every 200 ms until it holds, or fails the test with
// what it last saw once ctx ends.
func (p *ssPods) until(ctx context.Context, what string, cond func() (bool, string)) {
	p.t.Helper()
	for {
		ok, saw := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("%s: not reached; last: %s", what, saw)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *ssPods) ordinal(id string) int {
	p.t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(id, p.name+"-"))
	if err != nil || !strings.HasPrefix(id, p.name+"-") {
		p.t.Fatalf("member %q is not a pod of %s", id, p.name)
	}
	return n
}

// logs is pod ord's log, both streams: storesvr logs to stderr, which
// podman logs replays on its own stderr.
func (p *ssPods) logs(ord int) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.e.bin, append(append([]string{}, p.e.global...), "logs", p.names[ord])...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman logs %s: %v: %s", p.names[ord], err, out)
	}
	return string(out)
}

// loseDisk is the StatefulSet's pod that loses its volume, in the order
// that makes a member which forgets what it acknowledged hand IDs out
// twice: with one follower frozen (podman pause), segments of tag are
// reserved, committed by the leader and the other follower alone; that
// follower is killed and its volume deleted, and the leader is killed.
// The wiped pod restarts as Kubernetes restarts it on a new PVC (same
// ordinal, same args, an empty volume), the frozen one resumes, and, once
// either the wiped pod waits for the cluster's leader or the resumed one
// names a leader, the old leader restarts on its volume. A member that
// voted before it caught up would elect the resumed follower, which lacks
// those segments. Checked: the wiped pod is re-admitted as a non-voter
// (its log and the leader's) and promoted to voter (ClusterStatus), it
// is ready and serves, and every segment reserved afterwards, through it and through
// the leader, is above every ID acknowledged before.
func (p *ssPods) loseDisk(ctx context.Context, tag string) {
	t := p.t
	// Settled first: a member that started late may itself still be
	// coming back into the cluster the others bootstrapped.
	var st ssStatus
	p.until(ctx, "three voters, a leader, every pod ready", func() (bool, string) {
		if err := p.call(ctx, 0, "ClusterStatus", `{}`, &st); err != nil {
			return false, err.Error()
		}
		if st.LeaderID == "" || st.voters() != 3 || len(st.Members) != 3 {
			return false, fmt.Sprintf("%+v", st)
		}
		for ord := range 3 {
			if code, body := p.readyz(ctx, ord); code != http.StatusOK {
				return false, fmt.Sprintf("pod %d: /readyz %d %s", ord, code, body)
			}
		}
		return true, ""
	})
	lead := p.ordinal(st.LeaderID)
	var followers []int
	for _, m := range st.Members {
		if o := p.ordinal(m.ID); o != lead {
			followers = append(followers, o)
		}
	}
	paused, wiped := followers[0], followers[1]

	p.e.must(time.Minute, "pause", p.names[paused])
	t.Cleanup(func() { p.e.cmd(time.Minute, "unpause", p.names[paused]) })
	var acked uint64 // the highest ID acknowledged before
	for range 4 {
		var seg ssSegment
		postOK(ctx, t, p.urls[lead]+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"`+tag+`","size":"10"}`, &seg)
		_, last := seg.bounds(t)
		acked = max(acked, last)
	}
	// SIGKILL both: a graceful stop would hand leadership over first.
	p.e.must(time.Minute, "rm", "-f", "-v", "-t", "0", p.names[wiped])
	p.e.must(time.Minute, "kill", p.names[lead])
	p.start(wiped)
	p.e.must(time.Minute, "unpause", p.names[paused])

	// The wiped pod can only wait for the old leader; a blind one would
	// already vote.
	p.until(ctx, "the wiped pod waiting for the cluster's leader, or the resumed follower naming a leader", func() (bool, string) {
		code, body := p.readyz(ctx, wiped)
		if code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for its leader to take this member back") {
			return true, body
		}
		var s ssStatus
		err := p.call(ctx, paused, "ClusterStatus", `{}`, &s)
		return err == nil && s.LeaderID != "", fmt.Sprintf("wiped pod's /readyz %d %q; resumed follower's ClusterStatus %+v %v", code, body, s, err)
	})
	p.e.must(time.Minute, "start", p.names[lead])

	// Promoted: a voter again, beside the two others.
	wipedID := fmt.Sprintf("%s-%d", p.name, wiped)
	sawNonvoter := false
	p.until(ctx, "three voters and a leader", func() (bool, string) {
		var s ssStatus
		if err := p.call(ctx, lead, "ClusterStatus", `{}`, &s); err != nil {
			return false, err.Error()
		}
		for _, m := range s.Members {
			sawNonvoter = sawNonvoter || m.ID == wipedID && m.Suffrage == "nonvoter"
		}
		return s.LeaderID != "" && s.voters() == 3 && len(s.Members) == 3, fmt.Sprintf("%+v", s)
	})
	p.until(ctx, "the wiped pod ready", func() (bool, string) {
		code, body := p.readyz(ctx, wiped)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})

	// No ID twice: through the wiped pod, and through every other.
	for _, ord := range []int{wiped, lead, paused} {
		var seg ssSegment
		postOK(ctx, t, p.urls[ord]+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"`+tag+`","size":"10"}`, &seg)
		if first, _ := seg.bounds(t); first <= acked {
			t.Errorf("after %s lost its volume, ReserveSegment through %s-%d answered %s..%s: IDs up to %d were acknowledged before",
				wipedID, p.name, ord, seg.First, seg.Last, acked)
		}
	}

	// Re-admitted as a non-voter: the wiped pod's log and the log of
	// whichever member led then. The promotion is read from ClusterStatus
	// above: the leader's log line for it comes only once the leader has
	// seen the change committed, and one interrupted there has none.
	readmitted := false
	for _, line := range strings.Split(p.logs(wiped), "\n") {
		readmitted = readmitted || strings.Contains(line, "re-admitted by the cluster") && strings.Contains(line, "nonvoter")
	}
	if !readmitted {
		t.Errorf("%s's log does not say it was re-admitted by the cluster as a non-voter", wipedID)
	}
	readded := false
	for _, ord := range []int{lead, paused} {
		for _, line := range strings.Split(p.logs(ord), "\n") {
			readded = readded || strings.Contains(line, wipedID) && strings.Contains(line, "member re-added as a non-voter")
		}
	}
	if !readded {
		t.Errorf("neither %s-%d's nor %s-%d's log says %s was re-added as a non-voter", p.name, lead, p.name, paused, wipedID)
	}
	if t.Failed() {
		return
	}
	t.Logf("%s lost its volume while %s-%d was frozen and %s-%d led (IDs up to %d acknowledged): re-admitted as a non-voter (seen in ClusterStatus: %v), promoted, ready, serving above %d",
		wipedID, p.name, paused, p.name, lead, acked, sawNonvoter, acked)
}
