package auth

import "crypto/subtle"

// Memo is one connection's memory of the Authorization value it last
// presented that matched a token. The HTTP/1.1 front keeps one per
// connection: a client sends the same header with every request on a
// kept-alive connection, and with a Memo only the first pays for the
// SHA-256 and the comparison with every listed token; the others compare
// their header with the remembered one. The zero value remembers nothing.
//
// A Memo never outlives the token list it was filled from: after a reload
// (SIGHUP) the next request is checked against the new list, so a removed
// token stops working on connections that used it as it does on new ones.
// Refused values are not remembered. The comparison with the remembered
// value takes a time independent of the bytes compared; it reveals only
// whether the presented value has the remembered one's length, and the
// remembered value is one this same connection sent before.
//
// A Memo belongs to one connection and is not safe for concurrent use.
type Memo struct {
	set   *[]token // the list the value was found in
	value []byte   // the whole header value, "Bearer ..."
	tok   *token
}

// AllowsMemo is Allows with the connection's memo m.
func (a *Authorizer) AllowsMemo(m *Memo, authorization []byte, need Role) bool {
	if a == nil || need == Open {
		return true
	}
	set := a.tokens.Load()
	if m.set == set && len(m.value) == len(authorization) && subtle.ConstantTimeCompare(m.value, authorization) == 1 {
		return m.tok.role >= need
	}
	t := match(*set, authorization)
	if t == nil {
		return false
	}
	m.set, m.value, m.tok = set, append(m.value[:0], authorization...), t
	return t.role >= need
}
