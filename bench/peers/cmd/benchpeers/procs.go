package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/seqsvr/seqsvr/bench/peers/leaf"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// proc is a peer's process (etcd member, MariaDB, Redis, leafsvr) in a
// process group of its own, so SIGKILL takes its children too.
type proc struct {
	name, bin, logPath string
	args               []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

func newProc(name, logPath, bin string, args ...string) *proc {
	p := &proc{name: name, bin: bin, logPath: logPath, args: args}
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	return p
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Started as launch starts seqsvr's processes: should benchpeers die
	// without reaching killAll (SIGKILL, a crash), the kernel ends the
	// peer anyway (Pdeathsig, from launch's locked thread, which lives as
	// long as benchpeers); nothing of a run outlives it.
	if err := launch.StartCommand(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process group and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// killAll ends every peer process this run started.
func killAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

func freePort() (int, error) { return launch.FreePort("127.0.0.1") }

// errExited ends a poll at once: the process it waits for is gone.
var errExited = errors.New("exited")

// alive is nil while every p runs; else errExited naming the first gone
// and where its log is.
func alive(ps ...*proc) error {
	for _, p := range ps {
		if !p.running() {
			return fmt.Errorf("%s %w; its log ends: %s", p.name, errExited, logTail(p.logPath))
		}
	}
	return nil
}

// logTail is the last line of a log (the work directory holding it is
// removed when the run ends).
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return firstLine(lines[len(lines)-1])
}

// poll calls f every 100 ms until it succeeds or timeout passes, or f
// reports errExited.
func poll(ctx context.Context, timeout time.Duration, what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		c, cc := context.WithTimeout(ctx, 2*time.Second)
		last = f(c)
		cc()
		if last == nil {
			return nil
		}
		if errors.Is(last, errExited) {
			return fmt.Errorf("%s: %w", what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready after %v: %w", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// version runs bin with args and returns the first line it prints.
func version(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// --- etcd ---

type etcdMember struct {
	name, clientURL string
	id              uint64
	p               *proc
}

type etcdCluster struct {
	members []*etcdMember
	cli     *clientv3.Client
}

// startEtcd starts a 3-member etcd cluster on loopback with its defaults
// (WAL fsync on every commit) unless heartbeat/election are set.
func startEtcd(ctx context.Context, bin, dir string, heartbeatMs, electionMs int) (*etcdCluster, error) {
	type ports struct{ client, peer int }
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ps := make([]ports, 3)
	var initial []string
	for i := range ps {
		var err error
		if ps[i].client, err = freePort(); err != nil {
			return nil, err
		}
		if ps[i].peer, err = freePort(); err != nil {
			return nil, err
		}
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, ps[i].peer))
	}
	ec := &etcdCluster{}
	for i, pt := range ps {
		name := fmt.Sprintf("e%d", i+1)
		cu := fmt.Sprintf("http://127.0.0.1:%d", pt.client)
		pu := fmt.Sprintf("http://127.0.0.1:%d", pt.peer)
		args := []string{"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", cu, "--advertise-client-urls", cu,
			"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "seqsvr-bench", "--log-level", "warn"}
		if heartbeatMs > 0 {
			args = append(args, "--heartbeat-interval", strconv.Itoa(heartbeatMs))
		}
		if electionMs > 0 {
			args = append(args, "--election-timeout", strconv.Itoa(electionMs))
		}
		m := &etcdMember{name: name, clientURL: cu, p: newProc(name, filepath.Join(dir, name+".log"), bin, args...)}
		if err := m.p.start(); err != nil {
			return nil, err
		}
		ec.members = append(ec.members, m)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	ec.cli = cli
	err = poll(ctx, 60*time.Second, "etcd", func(ctx context.Context) error {
		for _, m := range ec.members {
			if err := alive(m.p); err != nil {
				return err
			}
		}
		_, err := cli.Put(ctx, "/seqsvr-bench/ready", "1")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	for _, m := range ec.members {
		st, err := cli.Status(ctx, strings.TrimPrefix(m.clientURL, "http://"))
		if err != nil {
			return nil, err
		}
		m.id = st.Header.MemberId
	}
	return ec, nil
}

func (ec *etcdCluster) endpoints() []string {
	var out []string
	for _, m := range ec.members {
		out = append(out, strings.TrimPrefix(m.clientURL, "http://"))
	}
	return out
}

// leader asks the running members until one names a running leader.
func (ec *etcdCluster) leader(ctx context.Context) (*etcdMember, error) {
	var found *etcdMember
	err := poll(ctx, 30*time.Second, "etcd leader", func(ctx context.Context) error {
		for _, m := range ec.members {
			if !m.p.running() {
				continue
			}
			st, err := ec.cli.Status(ctx, strings.TrimPrefix(m.clientURL, "http://"))
			if err != nil {
				continue
			}
			for _, l := range ec.members {
				if l.id == st.Leader && l.p.running() {
					found = l
					return nil
				}
			}
		}
		return errors.New("no member names a running leader")
	})
	return found, err
}

// restart starts a killed member again and waits until the cluster
// commits a write.
func (ec *etcdCluster) restart(ctx context.Context, m *etcdMember) error {
	if err := m.p.start(); err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, "etcd after restart", func(ctx context.Context) error {
		if _, err := ec.cli.Status(ctx, strings.TrimPrefix(m.clientURL, "http://")); err != nil {
			return err
		}
		_, err := ec.cli.Put(ctx, "/seqsvr-bench/ready", "1")
		return err
	})
}

// --- MariaDB ---

// errNotInstalled marks a peer whose server is not on this machine: the
// smoke run skips it with a message; any other failure to start fails it.
var errNotInstalled = errors.New("not installed")

type mariaDB struct {
	dsn, version string
	settings     map[string]string
	p            *proc
}

// firstBin is the first of names found on PATH (or in /usr/sbin).
func firstBin(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		if p := filepath.Join("/usr/sbin", n); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// startMariaDB initialises a data directory and runs one server with
// every commit durable: innodb_flush_log_at_trx_commit=1 (redo log fsync
// per commit) and sync_binlog=1 with the binary log on (binlog fsync per
// commit), as a primary that feeds replicas would run. Grants are skipped:
// it listens on loopback only and holds nothing but the benchmark's rows.
func startMariaDB(ctx context.Context, dir string) (*mariaDB, error) {
	server, install := firstBin("mariadbd", "mysqld"), firstBin("mariadb-install-db", "mysql_install_db")
	if server == "" || install == "" {
		return nil, fmt.Errorf("mariadbd or mariadb-install-db %w (make bench-peers installs mariadb-server with apt when run as root)", errNotInstalled)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := newProc("mariadb", filepath.Join(dir, "mariadb.log"), server, "--no-defaults",
		"--datadir="+data, "--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--user=root", "--skip-grant-tables", "--skip-name-resolve", "--max-connections=1000",
		"--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1",
		"--log-bin="+filepath.Join(dir, "binlog"), "--server-id=1", "--innodb-buffer-pool-size=256M")
	if err := p.start(); err != nil {
		return nil, err
	}
	m := &mariaDB{p: p, dsn: fmt.Sprintf("root@tcp(127.0.0.1:%d)/leaf", port), settings: map[string]string{}}
	root, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := poll(ctx, 60*time.Second, "mariadb", func(ctx context.Context) error {
		if err := alive(p); err != nil {
			return err
		}
		return root.PingContext(ctx)
	}); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, p.logPath)
	}
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS leaf", "USE leaf", leaf.Schema} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("mariadb: %s: %w", q, err)
		}
	}
	// What the server actually runs with, for the report.
	for _, v := range []string{"version", "innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "innodb_doublewrite", "innodb_flush_method", "binlog_format"} {
		var s sql.NullString
		if err := root.QueryRowContext(ctx, "SELECT @@"+v).Scan(&s); err != nil {
			return nil, fmt.Errorf("mariadb: @@%s: %w", v, err)
		}
		m.settings[v] = s.String
	}
	m.version = m.settings["version"]
	return m, nil
}

// addTag inserts a leaf_alloc row (max_id 1, as Leaf's own rows start).
func (m *mariaDB) addTag(ctx context.Context, tag string, step int64) error {
	db, err := sql.Open("mysql", m.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, ?, 'seqsvr peer benchmark')", tag, step)
	return err
}

// --- Redis, leafsvr ---

func startRedis(ctx context.Context, dir string) (addr, ver string, err error) {
	bin := firstBin("redis-server")
	if bin == "" {
		return "", "", fmt.Errorf("redis-server %w (make bench-peers installs it with apt when run as root)", errNotInstalled)
	}
	port, err := freePort()
	if err != nil {
		return "", "", err
	}
	p := newProc("redis", filepath.Join(dir, "redis.log"), bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := p.start(); err != nil {
		return "", "", err
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	err = poll(ctx, 10*time.Second, "redis", func(context.Context) error {
		if err := alive(p); err != nil {
			return err
		}
		return dialOK(addr)
	})
	return addr, version(bin, "--version"), err
}

func startLeafsvr(ctx context.Context, bin, dir, dsn string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := newProc("leafsvr", filepath.Join(dir, "leafsvr.log"), bin, "-addr", addr, "-dsn", dsn)
	if err := p.start(); err != nil {
		return "", err
	}
	url := "http://" + addr
	return url, poll(ctx, 20*time.Second, "leafsvr", func(ctx context.Context) error {
		if err := alive(p); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

func dialOK(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
