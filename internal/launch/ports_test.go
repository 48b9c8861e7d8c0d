package launch

import (
	"net"
	"strconv"
	"testing"
)

// A process hands out many ports over a test run (every restart of every
// member); each must be new, even though the kernel likes to offer a port
// that was just closed, and each must lie below the ephemeral range, where
// no outgoing connection can take it before its process binds it.
func TestFreePortNeverRepeats(t *testing.T) {
	hi := min(portHigh, ephemeralLow())
	seen := map[int]bool{}
	for range 300 {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		if p < portLow || p >= hi {
			t.Fatalf("port %d outside %d-%d", p, portLow, hi-1)
		}
		seen[p] = true
	}
}

// Two pools over one lock directory stand for two test processes (flock
// locks belong to open files, so two opens conflict in one process too):
// they never hand out the same port, and a pool skips a port another
// program listens on.
func TestFreePortAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	a, b := &portPool{dir: dir}, &portPool{dir: dir}
	seen := map[int]string{}
	for i := range 400 {
		pool, name := a, "a"
		if i%2 == 1 {
			pool, name = b, "b"
		}
		p, err := pool.free("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[p]; dup {
			t.Fatalf("port %d handed out to %s and %s", p, other, name)
		}
		seen[p] = name
	}
	// In a range of three ports, one held by another program's listener
	// and one claimed by a, b gets the third, and then none.
	var lo int
	for lo = portLow; lo+3 < portHigh; lo += 3 {
		if portsFree(lo, 3) {
			break
		}
	}
	dir = t.TempDir()
	a, b = &portPool{dir: dir, lo: lo, hi: lo + 3}, &portPool{dir: dir, lo: lo, hi: lo + 3}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(lo+1))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pa, err := a.free("127.0.0.1")
	if err != nil || pa == lo+1 {
		t.Fatalf("a: %d, %v", pa, err)
	}
	pb, err := b.free("127.0.0.1")
	if err != nil || pb == lo+1 || pb == pa {
		t.Fatalf("b: %d, %v; a has %d, a listener %d", pb, err, pa, lo+1)
	}
	if p, err := b.free("127.0.0.1"); err == nil {
		t.Fatalf("b got %d from a range with none left", p)
	}
}

// portsFree reports whether ports [lo, lo+n) can all be bound now.
func portsFree(lo, n int) bool {
	for p := lo; p < lo+n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
