package launch

import "testing"

// A process hands out many ports over a test run (every restart of every
// member); each must be new, even though the kernel likes to offer a port
// that was just closed.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
