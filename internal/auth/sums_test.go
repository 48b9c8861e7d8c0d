package auth

import (
	"crypto/sha256"
	"testing"
)

// sumsEqual is equality: every single differing bit, in every word, makes
// two digests unequal.
func TestSumsEqual(t *testing.T) {
	a := sha256.Sum256([]byte("a-token"))
	b := a
	if !sumsEqual(&a, &b) {
		t.Fatal("equal digests compare unequal")
	}
	for i := range sha256.Size * 8 {
		c := a
		c[i/8] ^= 1 << (i % 8)
		if sumsEqual(&a, &c) {
			t.Fatalf("digests differing in bit %d compare equal", i)
		}
	}
}
