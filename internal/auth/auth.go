package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// The errors of a refused call. Their text is what the caller reads.
var (
	ErrNoToken      = errs.New(errs.Unauthenticated, "missing bearer token (Authorization: Bearer TOKEN)")
	ErrUnknownToken = errs.New(errs.Unauthenticated, "unknown token")
)

// Authorizer checks bearer tokens against the current token list. The
// zero value is not usable; a nil *Authorizer allows everything (no
// --auth-file).
type Authorizer struct {
	path   string
	tokens atomic.Pointer[[]token]
	// roles is what each procedure the server answers needs (SetRoles);
	// until it is set every procedure is refused.
	roles atomic.Pointer[Roles]

	// reloadMu orders reloads (SIGHUP and the file watch); stamp is the
	// file as last loaded, failed as it last did not load, so one bad
	// file is neither parsed nor logged again every second.
	reloadMu      sync.Mutex
	stamp, failed fileStamp
}

// New loads path.
func New(path string) (*Authorizer, error) {
	a := &Authorizer{path: path}
	if err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Path is the auth file.
func (a *Authorizer) Path() string { return a.path }

// Reload reads the file again and swaps the list in at once. On error the
// old list stays in force.
func (a *Authorizer) Reload() error {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	return a.reloadLocked(nil)
}

// ReloadIfChanged reloads the file if it changed since it was last
// loaded (or last failed to load), reporting whether it tried. On error
// the old list stays in force.
func (a *Authorizer) ReloadIfChanged() (bool, error) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	changed := false
	return changed, a.reloadLocked(func(st fileStamp) bool {
		changed = st != a.stamp && st != a.failed
		return changed
	})
}

// reloadLocked reads the file and swaps its list in when want (nil:
// always) accepts the file's stamp.
func (a *Authorizer) reloadLocked(want func(fileStamp) bool) error {
	b, st, err := readStamped(a.path)
	if err != nil {
		if want != nil {
			// A file missing for a moment (rewritten by rename) is
			// looked at again on the next check, not reported each time.
			return nil
		}
		return fmt.Errorf("auth file: %w", err)
	}
	if want != nil && !want(st) {
		return nil
	}
	ts, err := parse(b)
	if err != nil {
		a.failed = st
		return err
	}
	a.tokens.Store(&ts)
	a.stamp, a.failed = st, fileStamp{}
	return nil
}

// Len is the number of tokens in force.
func (a *Authorizer) Len() int { return len(*a.tokens.Load()) }

// SetRoles puts rs in force: the roles of the procedures the server
// answers (see Roles). A server sets them once it knows what it mounts,
// and again when that changes (a component that finished starting).
// On a nil Authorizer it does nothing.
func (a *Authorizer) SetRoles(rs Roles) {
	if a != nil {
		a.roles.Store(&rs)
	}
}

// Roles is what SetRoles last put in force (nil before, and on a nil
// Authorizer).
func (a *Authorizer) Roles() Roles {
	if a == nil {
		return nil
	}
	if rs := a.roles.Load(); rs != nil {
		return *rs
	}
	return nil
}

// Check authorizes a call of procedure with the given Authorization header
// value. It returns the token's name, or ErrNoToken / ErrUnknownToken
// (unauthenticated) or a permission_denied error.
func (a *Authorizer) Check(authorization, procedure string) (string, error) {
	return a.CheckRole(authorization, a.Roles().Required(procedure), procedure)
}

// CheckRole is Check with the role given: what is being called is only
// named in the error.
func (a *Authorizer) CheckRole(authorization string, need Role, what string) (string, error) {
	if a == nil || need == Open {
		return "", nil
	}
	tok, ok := bearer(authorization)
	if !ok {
		return "", ErrNoToken
	}
	t := a.lookup([]byte(tok))
	if t == nil {
		return "", ErrUnknownToken
	}
	if t.role < need {
		if need > Admin {
			return t.name, fmt.Errorf("%w: %s is not callable by any token", errs.PermissionDenied, what)
		}
		return t.name, fmt.Errorf("%w: token %q has role %s; %s needs %s", errs.PermissionDenied, t.name, t.role, what, need)
	}
	return t.name, nil
}

// Allows is CheckRole as the HTTP/1.1 front asks it: the header value as
// the bytes the front parsed, a yes or no instead of an error, and no
// allocation. (CheckRole's string header costs two: converting the
// front's bytes to a string, and the token back to bytes to hash it once
// it is longer than 32 bytes, as a token made with `openssl rand -hex 32`
// is.) The front declines what this refuses and net/http's CheckRole
// writes the answer, so both paths share one rule. The front calls it
// through AllowsMemo, which skips the work for a repeated header.
func (a *Authorizer) Allows(authorization []byte, need Role) bool {
	if a == nil || need == Open {
		return true
	}
	t := match(*a.tokens.Load(), authorization)
	return t != nil && t.role >= need
}

// match is the token of ts that the header value authorization presents,
// or nil.
func match(ts []token, authorization []byte) *token {
	tok, ok := bearer(authorization)
	if !ok {
		return nil
	}
	return lookupIn(ts, tok)
}

// lookup finds the token by comparing its hash with every listed one in
// constant time. Hashing first makes the comparison independent of the
// token's length, and the loop never stops early.
func (a *Authorizer) lookup(tok []byte) *token {
	return lookupIn(*a.tokens.Load(), tok)
}

// lookupIn is lookup in the list ts.
func lookupIn(ts []token, tok []byte) *token {
	sum := sha256.Sum256(tok)
	var found *token
	for i := range ts {
		if sumsEqual(&sum, &ts[i].sum) {
			found = &ts[i]
		}
	}
	return found
}

// sumsEqual compares two digests in time independent of their contents,
// as subtle.ConstantTimeCompare does, a word at a time: every call on the
// front's hot path compares against every token, and byte-wise that was
// most of the check's cost.
func sumsEqual(a, b *[sha256.Size]byte) bool {
	var d uint64
	for i := 0; i < sha256.Size; i += 8 {
		d |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	return subtle.ConstantTimeEq(int32(uint32(d>>32)|uint32(d)), 0) == 1
}

// bearer takes TOKEN out of "Bearer TOKEN" (scheme case-insensitive, as
// RFC 7235 says; blanks around TOKEN ignored), for a header as a string
// (net/http) or as bytes (the HTTP/1.1 front), without copying.
func bearer[T string | []byte](h T) (T, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(string(h[:len(prefix)]), prefix) {
		return h[:0], false
	}
	tok := h[len(prefix):]
	for len(tok) > 0 && isBlank(tok[0]) {
		tok = tok[1:]
	}
	for len(tok) > 0 && isBlank(tok[len(tok)-1]) {
		tok = tok[:len(tok)-1]
	}
	return tok, len(tok) != 0
}

// isBlank is HTTP's optional white space plus the line ends a header
// value cannot hold unfolded: no token contains any of them (LoadFile).
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
