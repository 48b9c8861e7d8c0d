package deploy

import (
	"regexp"
	"strings"
	"testing"
)

// compose is the subset of the Compose specification compose.yaml keeps
// to, decoded strictly: TestImage runs these services with podman exactly
// as written, so a key outside it would be a key nobody ran.
type compose struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]struct{}       `json:"volumes"`
	// x- extension fields hold the YAML anchors.
	XStoresvrEnv map[string]string `json:"x-storesvr-env"`
	XAllocsvrEnv map[string]string `json:"x-allocsvr-env"`
}

type composeService struct {
	Image           string            `json:"image"`
	Command         []string          `json:"command"`
	Hostname        string            `json:"hostname"`
	Environment     map[string]string `json:"environment"`
	Ports           []string          `json:"ports"`
	Volumes         []string          `json:"volumes"`
	DependsOn       []string          `json:"depends_on"`
	Restart         string            `json:"restart"`
	StopGracePeriod string            `json:"stop_grace_period"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	var c compose
	readStrict(t, "../compose.yaml", &c)
	return c
}

var composePort = regexp.MustCompile(`^127\.0\.0\.1:(\d+):(\d+)$`)

func TestComposeFile(t *testing.T) {
	c := readCompose(t)
	stores, allocs := 0, 0
	for name, s := range c.Services {
		if len(s.Command) == 0 {
			t.Fatalf("%s: no command", name)
		}
		bin := s.Command[0]
		var env []string
		for k := range s.Environment {
			env = append(env, k)
		}
		checkArgs(t, "compose.yaml "+name, bin, s.Command[1:], env)
		switch bin {
		case "storesvr":
			stores++
			// The peers list names this member at its own addresses.
			self := s.Environment["SEQSVR_NODE_ID"] + "=" + s.Environment["SEQSVR_RAFT_ADDR"] + "@" + s.Environment["SEQSVR_HTTP_ADDR"]
			if !strings.Contains(","+s.Environment["SEQSVR_PEERS"]+",", ","+self+",") {
				t.Errorf("%s: %s is not in SEQSVR_PEERS", name, self)
			}
		case "allocsvr":
			allocs++
		}
		if s.Hostname != name {
			t.Errorf("%s: hostname %q", name, s.Hostname)
		}
		if len(s.Volumes) != 1 || !strings.HasSuffix(s.Volumes[0], ":/var/lib/seqsvr") {
			t.Errorf("%s: volumes %v, want the image's data dir", name, s.Volumes)
		}
		for _, p := range s.Ports {
			if !composePort.MatchString(p) {
				t.Errorf("%s: port %q, want 127.0.0.1:HOST:CONTAINER", name, p)
			}
		}
	}
	if stores != 3 || allocs != 2 {
		t.Errorf("%d storesvrs and %d allocsvrs, want 3 and 2", stores, allocs)
	}
}
