package dirlock_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/seqsvr/seqsvr/internal/dirlock"
)

func TestLock(t *testing.T) {
	if !dirlock.Supported {
		t.Skip("no file locks on this platform")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := dirlock.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file, so a second open in this
	// process is refused as another process would be.
	if _, err := dirlock.Lock(path); !errors.Is(err, dirlock.ErrHeld) {
		t.Fatalf("second Lock while held: %v, want ErrHeld", err)
	}
	release()
	again, err := dirlock.Lock(path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}
