package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// unitKeys reads a systemd unit's Key=Value lines (the last one of a
// repeated key wins, as for most settings).
func unitKeys(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]string{}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q", path, line)
		}
		keys[k] = v
	}
	return keys
}

// envFile reads KEY=VALUE lines, commented-out ones too (they are the
// documented options; they must exist as well).
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "#")
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "SEQSVR_") && !strings.Contains(k, " ") {
			env[k] = v
		}
	}
	return env
}

func TestSystemdUnits(t *testing.T) {
	for _, bin := range []string{"storesvr", "allocsvr"} {
		unit := filepath.Join("systemd", bin+".service")
		keys := unitKeys(t, unit)
		exec := strings.Fields(keys["ExecStart"])
		if len(exec) == 0 || filepath.Base(exec[0]) != bin {
			t.Errorf("%s: ExecStart %q", unit, keys["ExecStart"])
			continue
		}
		env := envFile(t, filepath.Join("systemd", bin+".env"))
		if keys["EnvironmentFile"] != "/etc/seqsvr/"+bin+".env" {
			t.Errorf("%s: EnvironmentFile %q", unit, keys["EnvironmentFile"])
		}
		var names []string
		for k := range env {
			names = append(names, k)
		}
		if len(names) < 4 {
			t.Errorf("%s.env: only %v", bin, names)
		}
		checkArgs(t, unit, bin, exec[1:], names)
		checkCredentials(t, unit, env)
		// Restarts never stop for good: no start rate limit.
		if keys["StartLimitIntervalSec"] != "0" {
			t.Errorf("%s: StartLimitIntervalSec=%q: systemd gives up after StartLimitBurst failures; want 0", unit, keys["StartLimitIntervalSec"])
		}
		for k, want := range map[string]string{
			"Restart": "on-failure", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
			"StateDirectory": "seqsvr/" + bin, "DynamicUser": "yes",
		} {
			if keys[k] != want {
				t.Errorf("%s: %s=%q, want %q", unit, k, keys[k], want)
			}
		}
		if !strings.HasPrefix(env["SEQSVR_DATA_DIR"], "/var/lib/seqsvr/"+bin) {
			t.Errorf("%s.env: SEQSVR_DATA_DIR %q is not under the StateDirectory", bin, env["SEQSVR_DATA_DIR"])
		}
		var nofile int
		if _, err := fmt.Sscan(keys["LimitNOFILE"], &nofile); err != nil || nofile < 65536 {
			t.Errorf("%s: LimitNOFILE %q, want at least 65536", unit, keys["LimitNOFILE"])
		}
		stop, err := time.ParseDuration(keys["TimeoutStopSec"])
		if err != nil {
			t.Fatalf("%s: TimeoutStopSec %q: %v", unit, keys["TimeoutStopSec"], err)
		}
		grace := 5 * time.Second
		if v := env["SEQSVR_SHUTDOWN_GRACE"]; v != "" {
			if grace, err = time.ParseDuration(v); err != nil {
				t.Fatal(err)
			}
		}
		// Graceful handover: drain, then the per-key leave (2s) and Raft's
		// or the snowflake's shutdown; at least twice it.
		if stop < 2*(grace+2*time.Second) {
			t.Errorf("%s: TimeoutStopSec %v is not well above the graceful stop (--shutdown-grace %v + 2s handover)", unit, stop, grace)
		}
	}
}

// credentialFlag says which SEQSVR_ variables name a secret file: the
// auth file, tokens, keys, and the certificates and CAs beside them.
var credentialFlag = regexp.MustCompile(`^SEQSVR_(AUTH_FILE|.*TOKEN_FILE|.*TLS_(CERT|KEY|CA)|STORE_CA|STORE_CERT|STORE_KEY)$`)

// checkCredentials: a unit with a dynamic user gets every credential file
// through LoadCredential= (no group can own them for it, so operators
// would make them world-readable): each such variable is set by the unit
// to %d/NAME with a LoadCredential=NAME from /etc/seqsvr/credentials, and
// the environment file sets none.
func checkCredentials(t *testing.T, unit string, env map[string]string) {
	t.Helper()
	lines := unitLines(t, unit)
	loaded := map[string]bool{}
	for _, lc := range lines["LoadCredential"] {
		name, src, _ := strings.Cut(lc, ":")
		if !strings.HasPrefix(src, "/etc/seqsvr/credentials/") {
			t.Errorf("%s: LoadCredential=%s: want a file of /etc/seqsvr/credentials", unit, lc)
		}
		loaded[name] = true
	}
	set := 0
	for _, e := range lines["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		if !credentialFlag.MatchString(k) {
			continue
		}
		set++
		name, ok := strings.CutPrefix(v, "%d/")
		if !ok || !loaded[name] {
			t.Errorf("%s: %s=%s: want %%d/NAME of a LoadCredential=NAME", unit, k, v)
		}
	}
	if set == 0 {
		t.Errorf("%s: no credential passed with LoadCredential=", unit)
	}
	for k := range env {
		if credentialFlag.MatchString(k) {
			t.Errorf("%s: its environment file sets %s: credentials go through LoadCredential=", unit, k)
		}
	}
}

// systemd-analyze verify checks every directive and the ExecStart binary;
// the units name /usr/local/bin, so a copy names the test's binaries.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"storesvr.service", "allocsvr.service", "seqsvr-backup.service", "seqsvr-backup.timer"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		u := filepath.Join(dir, name)
		if err := os.WriteFile(u, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/", binDir+"/")), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, u)
	}
	out, err := exec.Command(sa, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	// verify exits 0 with warnings too: any output is a finding.
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
