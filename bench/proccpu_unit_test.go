package bench

import (
	"os"
	"testing"
	"time"
)

// procCPUTicks of this process grows while it spins for a while, and a
// process that does not exist is an error.
func TestProcCPUTicks(t *testing.T) {
	before, err := procCPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	after, err := procCPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// 200 ms of spinning is about 20 ticks at USER_HZ 100; a loaded box
	// gives the spinner less, never none.
	if after <= before {
		t.Errorf("ticks %d -> %d after spinning (%d loops)", before, after, x)
	}
	if _, err := procCPUTicks(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
