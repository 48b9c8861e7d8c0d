//go:build !faults

package faults

import (
	"net/http"
	"time"
)

// Enabled reports whether this binary was built with -tags faults.
const Enabled = false

// Bug reports whether the named bug is planted. Always false here.
func Bug(string) bool { return false }

// ClockOffset is the injected clock skew. Always zero here.
func ClockOffset() time.Duration { return 0 }

// AdminHandler serves /debug/faults/ in fault builds; nil here.
func AdminHandler() http.Handler { return nil }
