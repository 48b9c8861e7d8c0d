package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}

// invoke runs seqctl in-process with env as its environment.
func invoke(env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, errRe string
	}{
		{[]string{"--version"}, 0, `^seqctl \S+ \(go`, ""},
		{[]string{"tag", "get", "x", "--version"}, 0, `^seqctl `, ""},
		{[]string{"--help"}, 0, `(?s)tag create TAG.*seq current SPACE KEY.*Exit codes`, ""},
		{[]string{"tag", "create", "--help"}, 0, `(?s)Usage: seqctl tag create TAG.*-step`, ""},
		{[]string{"tag", "--help"}, 0, `tag get TAG`, ""},
		{nil, 2, `Commands:`, ""},
		{[]string{"bogus"}, 2, `^$`, `unknown command "bogus"`},
		{[]string{"tag", "get"}, 2, `^$`, `usage: seqctl tag get TAG`},
		{[]string{"tag", "get", "a", "b"}, 2, `^$`, `usage: seqctl tag get TAG`},
		{[]string{"tag", "get", "a", "--nope"}, 2, `^$`, `flag provided but not defined: -nope`},
		{[]string{"tag", "get", "a", "-o", "yaml"}, 2, `^$`, `want table or json`},
		{[]string{"tag", "get", "a"}, 2, `^$`, `no store URL: set --store or \$SEQCTL_STORE`},
		{[]string{"next", "a", "--alloc", "x:1", "--token", "t", "--token-file", "f"}, 2, `^$`, `give one`},
		{[]string{"next", "a", "--alloc", "x:1", "--token-file", "/nonexistent"}, 2, `^$`, `token file`},
		{[]string{"seq", "next", "s", "minus-one", "--alloc", "x:1"}, 2, `^$`, `KEY "minus-one"`},
	} {
		code, out, errOut := invoke(nil, tc.args...)
		if code != tc.code || !regexp.MustCompile(tc.out).MatchString(out) || tc.errRe != "" && !regexp.MustCompile(tc.errRe).MatchString(errOut) {
			t.Errorf("seqctl %q: exit %d, stdout %q, stderr %q; want exit %d, stdout ~ %q, stderr ~ %q",
				tc.args, code, out, errOut, tc.code, tc.out, tc.errRe)
		}
	}
}

// Every binary prints its version with --version (and exits 0 at once,
// serving nothing).
func TestVersionEveryBinary(t *testing.T) {
	launchtest.SkipShort(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := launch.BuildPackages(ctx, dir, []string{launch.BaseTag}, "./cmd/seqctl", "./cmd/devcluster"); err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{
		"storesvr": filepath.Join(launchtest.BinDir(t), "storesvr"), "allocsvr": filepath.Join(launchtest.BinDir(t), "allocsvr"),
		"seqctl": filepath.Join(dir, "seqctl"), "devcluster": filepath.Join(dir, "devcluster"),
	}
	for name, bin := range bins {
		out, err := exec.CommandContext(ctx, bin, "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", name, err)
			continue
		}
		if !regexp.MustCompile(`^` + name + ` \S+ \(go\S+ \w+/\w+(, commit [0-9a-f]+(\+dirty)?)?\)\n$`).Match(out) {
			t.Errorf("%s --version printed %q", name, out)
		}
	}
}

// The subcommands against a real secure cluster (HTTPS, tokens, client
// certificates required by the stores), in order: each row's exit code
// and output.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "sec"))
	if err != nil {
		t.Fatal(err)
	}
	c := launchtest.Start(t, launch.Options{Stores: 3, Allocs: 1, Security: sec})
	clientTok := filepath.Join(dir, "client.token")
	if err := os.WriteFile(clientTok, []byte(sec.ClientToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SEQCTL_STORE":      strings.Join(c.StoreURLs(), ","),
		"SEQCTL_ALLOC":      c.Allocs[0].URL(),
		"SEQCTL_CA":         sec.CAFile,
		"SEQCTL_CERT":       sec.CertFile,
		"SEQCTL_KEY":        sec.KeyFile,
		"SEQCTL_TOKEN_FILE": sec.AdminTokenFile,
	}
	bk := filepath.Join(dir, "seqsvr.backup")
	var snowflake string
	steps := []struct {
		args       []string
		code       int
		out, errRe string
	}{
		{[]string{"tag", "create", "cli", "--step", "100", "--description", "from seqctl"}, 0, `(?m)^cli\s+0\s+100\s+from seqctl\s+\d{4}-`, ""},
		{[]string{"tag", "create", "cli"}, 1, `^$`, `^seqctl: already_exists: `},
		{[]string{"tag", "create", "bad name"}, 1, `^$`, `^seqctl: invalid_argument: `},
		{[]string{"tag", "get", "cli", "-o", "json"}, 0, `"maxId": "0"`, ""},
		{[]string{"tag", "update", "cli", "--step", "200"}, 0, `(?m)^cli\s+0\s+200\s+from seqctl`, ""},
		{[]string{"tag", "list"}, 0, `(?m)^TAG\s+MAX_ID.*\ncli\s`, ""},
		{[]string{"next", "cli", "-n", "3"}, 0, `^1\n2\n3\n$`, ""},
		{[]string{"next", "cli", "-o", "json"}, 0, `"ids": \[\s*"4"\s*\]`, ""},
		{[]string{"next", "cli", "-n", "0"}, 1, `^$`, `^seqctl: invalid_argument: count 0`},
		{[]string{"next", "nope"}, 1, `^$`, `^seqctl: not_found: `},
		{[]string{"snowflake", "-n", "2"}, 0, `^\d+\n\d+\n$`, ""},
		{[]string{"space", "create", "clisp", "--key-count", "1000", "--section-size", "100"}, 0, `(?m)^clisp\s+1000\s+100\s+10\s+10000`, ""},
		{[]string{"space", "get", "clisp", "-o", "json"}, 0, `"sectionCount": "10"`, ""},
		{[]string{"space", "list"}, 0, `(?m)^clisp\s`, ""},
		{[]string{"backup", bk}, 0, `(?m)^FILE\s+BYTES.*\n\S+\s+\d+\s+[0-9a-f]{16}\s`, ""},
		{[]string{"backup", "inspect", bk}, 0, `(?m)^cli\s+tag\s+200\s+200\s+\d+\n`, ""},
		{[]string{"backup", "inspect", bk, "-o", "json"}, 0, `"cluster_id": "[0-9a-f]{16}"`, ""},
		{[]string{"backup", filepath.Join(dir, "denied"), "--token-file", clientTok}, 1, `^$`, `^seqctl: permission_denied: `},
		{[]string{"space", "get", "nope"}, 1, `^$`, `^seqctl: not_found: `},
		{[]string{"member", "list"}, 0, `(?m)^s1\s.*\n^s2\s.*\n^s3\s`, ""},
		{[]string{"status"}, 0, `(?s)STORE\s+ID\s+STATE.*leader.*ALLOC\s+ID.*serving`, ""},
		{[]string{"status", "-o", "json", "--store", c.Stores[0].URL()}, 0, `"commitIndex"`, ""},
		{[]string{"status", "--alloc", c.Allocs[0].URL() + ",127.0.0.1:1"}, 1, `unreachable`, `^seqctl: unavailable: 1 of the processes`},
		{[]string{"tag", "delete", "cli"}, 0, `DELETED\s+cli`, ""},
		{[]string{"tag", "get", "cli"}, 1, `^$`, `^seqctl: not_found: `},
		{[]string{"tag", "list", "--token-file", clientTok}, 0, `TAG`, ""},
		{[]string{"tag", "create", "x", "--token-file", clientTok}, 1, `^$`, `^seqctl: permission_denied: `},
		{[]string{"tag", "list", "--token-file", "", "--token", "wrong"}, 1, `^$`, `^seqctl: unauthenticated: `},
		{[]string{"tag", "list", "--token-file", "", "--token", "wrong", "--grpc"}, 1, `^$`, `^seqctl: unauthenticated: `},
	}
	for _, s := range steps {
		code, out, errOut := invoke(env, s.args...)
		if code != s.code || !regexp.MustCompile(s.out).MatchString(out) || s.errRe != "" && !regexp.MustCompile(s.errRe).MatchString(errOut) {
			t.Errorf("seqctl %q: exit %d, stdout %q, stderr %q; want exit %d, stdout ~ %q, stderr ~ %q",
				s.args, code, out, errOut, s.code, s.out, s.errRe)
		}
		if s.args[0] == "snowflake" {
			snowflake, _, _ = strings.Cut(out, "\n")
		}
	}

	// A damaged backup file is refused, exit 1, naming the damage.
	file, err := os.ReadFile(bk)
	if err != nil {
		t.Fatal(err)
	}
	future := append([]byte(nil), file...)
	future[11]++ // the format version's low byte
	corrupt := append([]byte(nil), file...)
	corrupt[len(corrupt)/2] ^= 0xff
	for name, b := range map[string][]byte{"truncated": file[:len(file)-10], "corrupt": corrupt, "newer format": future} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := invoke(env, "backup", "inspect", path); code != 1 || out != "" || !strings.Contains(errOut, name) {
			t.Errorf("backup inspect of a %s file: exit %d, %q %q", name, code, out, errOut)
		}
	}

	code, out, errOut := invoke(env, "decode", snowflake, "-o", "json")
	var dec struct {
		WorkerID string `json:"workerId"`
		Time     string `json:"time"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &dec) != nil || dec.WorkerID != "0" || !strings.HasPrefix(dec.Time, time.Now().UTC().Format("2006-01-02")) {
		t.Errorf("decode %s: exit %d, %q %q", snowflake, code, out, errOut)
	}

	// The allocsvr learns a new space with its next heartbeat.
	poll.Until(t, 20*time.Second, "the allocsvr to learn space clisp", func() bool {
		code, out, errOut = invoke(env, "seq", "next", "clisp", "5")
		return code == 0 || !strings.Contains(errOut, "not_found")
	})
	if code != 0 || out != "1\n" {
		t.Errorf("seq next clisp 5: exit %d, %q %q", code, out, errOut)
	}
	if code, out, errOut = invoke(env, "seq", "current", "clisp", "5"); code != 0 || out != "1\n" {
		t.Errorf("seq current clisp 5: exit %d, %q %q", code, out, errOut)
	}
	if code, out, errOut = invoke(env, "seq", "next", "clisp", "1000"); code != 1 || !strings.HasPrefix(errOut, "seqctl: invalid_argument: ") {
		t.Errorf("seq next clisp 1000 (past key_count): exit %d, %q %q", code, out, errOut)
	}

	// Membership: remove a follower, see it gone, add it back.
	leader := launchtest.Leader(t, c)
	var f *launch.Proc
	for _, s := range c.Stores {
		if s != leader {
			f = s
		}
	}
	if code, out, errOut = invoke(env, "member", "remove", f.NodeID); code != 0 || strings.Contains(out, f.NodeID+" ") {
		t.Fatalf("member remove %s: exit %d, %q %q", f.NodeID, code, out, errOut)
	}
	if code, out, errOut = invoke(env, "member", "add", f.NodeID, f.RaftAddr, f.HTTPAddr, "-o", "json"); code != 0 || !strings.Contains(out, `"id": "`+f.NodeID+`"`) {
		t.Fatalf("member add %s: exit %d, %q %q", f.NodeID, code, out, errOut)
	}
	// Replace takes back a member that lost its data dir; a running one
	// holds its ID, and is refused.
	if code, out, errOut = invoke(env, "member", "replace", f.NodeID); code != 1 || !strings.Contains(errOut, "failed_precondition") {
		t.Fatalf("member replace %s while it runs: exit %d, %q %q", f.NodeID, code, out, errOut)
	}
	if code, out, errOut = invoke(env, "member", "replace", "nosuch"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("member replace nosuch: exit %d, %q %q", code, out, errOut)
	}
}
