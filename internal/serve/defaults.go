package serve

import "time"

// DefaultCommon is Common where nothing is set: the defaults of the flags
// both binaries share, defined here only (Register shows them in --help).
func DefaultCommon() Common {
	return Common{
		MaxBodyBytes:  DefaultMaxBodyBytes,
		ShutdownGrace: 5 * time.Second,
		FastHTTP:      true,
	}
}
