package tlsconf

import "time"

// SetNow replaces c's clock, so a test can pass the once-a-second recheck
// without sleeping.
func SetNow(c *CA, now func() time.Time) { c.now = now }

// SetKeyPairNow is SetNow for a KeyPair.
func SetKeyPairNow(k *KeyPair, now func() time.Time) { k.now = now }
