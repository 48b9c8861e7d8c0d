package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// unitLines are every Key=Value of a unit, repeated keys in order.
func unitLines(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		keys[k] = append(keys[k], v)
	}
	return keys
}

// systemdUnescape turns a command line of a unit into what the process
// gets: $$ is $, %% is %, %d is the credentials directory.
func systemdUnescape(s, credentials string) string {
	return strings.NewReplacer("$$", "$", "%%", "%", "%d", credentials).Replace(s)
}

// shCommand splits `/bin/sh -ec '...'` into the script.
var shCommand = regexp.MustCompile(`^/bin/sh -ec '(.*)'$`)

// TestBackupUnitRuns runs seqsvr-backup.service's commands as systemd
// would (its Environment=, its environment file with the store replaced,
// $STATE_DIRECTORY, the credentials directory) against a real storesvr,
// four times with BACKUP_KEEP=2: each run writes a backup that `seqctl
// backup inspect` reads, and the two newest stay.
func TestBackupUnitRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a storesvr")
	}
	unit := unitLines(t, "systemd/seqsvr-backup.service")
	timer := unitLines(t, "systemd/seqsvr-backup.timer")
	if len(timer["OnCalendar"]) == 0 || !slices.Contains(timer["Persistent"], "true") {
		t.Errorf("seqsvr-backup.timer: OnCalendar %v, Persistent %v: want a schedule that makes up missed runs", timer["OnCalendar"], timer["Persistent"])
	}
	dir := t.TempDir()
	sa := startServing(t, "storesvr", func() []string { return []string{freeAddr(t), freeAddr(t)} },
		func(a []string) []string {
			return []string{"--node-id", "s1", "--bootstrap", "--http-addr", a[0], "--raft-addr", a[1], "--data-dir", filepath.Join(dir, "s1-"+a[1])}
		},
		func(a []string) string { return "http://" + a[0] + "/readyz" })

	creds, state := filepath.Join(dir, "credentials"), filepath.Join(dir, "state")
	for _, d := range []string{creds, state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The storesvr runs without --auth-file: any token passes, but the
	// credential must be there, as LoadCredential= makes it.
	for _, lc := range unit["LoadCredential"] {
		name, _, _ := strings.Cut(lc, ":")
		if err := os.WriteFile(filepath.Join(creds, name), []byte("a-token-of-the-test-0123\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "STATE_DIRECTORY="+state, "CREDENTIALS_DIRECTORY="+creds, "BACKUP_KEEP=2",
		// The unit names /usr/local/bin/seqctl; the test's is first on PATH
		// and the commands' absolute path is replaced below.
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range envFile(t, "systemd/seqsvr-backup.env") {
		env = append(env, k+"="+v)
	}
	for _, e := range unit["Environment"] {
		env = append(env, systemdUnescape(e, creds))
	}
	env = append(env, "SEQCTL_STORE=http://"+sa[0])
	var scripts []string
	for _, key := range []string{"ExecStart", "ExecStartPost"} {
		for _, c := range unit[key] {
			m := shCommand.FindStringSubmatch(c)
			if m == nil {
				t.Fatalf("%s=%s: want /bin/sh -ec '...'", key, c)
			}
			scripts = append(scripts, strings.ReplaceAll(systemdUnescape(m[1], creds), "/usr/local/bin/seqctl", filepath.Join(binDir, "seqctl")))
		}
	}
	for run := 1; run <= 4; run++ {
		for _, s := range scripts {
			cmd := exec.Command("/bin/sh", "-ec", s)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("run %d: %s: %v\n%s", run, s, err, out)
			}
		}
		files, _ := filepath.Glob(filepath.Join(state, "seqsvr-*.bak"))
		if want := min(run, 2); len(files) != want {
			t.Fatalf("after run %d: %d backups %v, want %d", run, len(files), files, want)
		}
		// The names are by the second: the next run must not reuse one.
		waitNextSecond()
	}
	files, _ := filepath.Glob(filepath.Join(state, "seqsvr-*.bak"))
	out, err := exec.Command(filepath.Join(binDir, "seqctl"), "backup", "inspect", files[len(files)-1]).CombinedOutput()
	if err != nil {
		t.Fatalf("seqctl backup inspect: %v\n%s", err, out)
	}
	t.Logf("the backup unit's commands ran 4 times, kept %v:\n%s", files, out)
}

// waitNextSecond returns once the wall clock's second has changed: the
// backup files are named by the second.
func waitNextSecond() {
	for s := time.Now().Unix(); time.Now().Unix() == s; {
		time.Sleep(10 * time.Millisecond)
	}
}
