package h1

import "bytes"

// reason says why a request was handed off; the front counts each.
type reason int

const (
	served      reason = iota // not a hand-off
	incomplete                // the request was not all in the buffer (handed off when the client hangs up or times out mid-request)
	tooLarge                  // head and body exceed the buffer or maxFields
	unsupported               // valid HTTP the front leaves to net/http (HTTP/2, HTTP/1.0, query, Transfer-Encoding, Upgrade, Expect, Origin, ...)
	malformed                 // not valid HTTP/1.1 as the front reads it; net/http answers it
	declined                  // no route took it
	refused                   // Admit refused the head of a request whose body was still coming
	alpnH2                    // TLS negotiated h2 by ALPN: the connection is net/http's from the start
	numReasons
)

var reasonNames = [numReasons]string{"served", "incomplete", "too_large", "unsupported", "malformed", "declined", "refused", "h2"}

// handOffReasons are the reasons a connection is handed to net/http.
var handOffReasons = []reason{incomplete, tooLarge, unsupported, malformed, declined, refused, alpnH2}

func (r reason) String() string { return reasonNames[r] }

// maxFields bounds the header lines the front keeps per request.
const maxFields = 32

// parse reads one request from the start of b, the bytes buffered so far
// in a buffer of bufSize bytes. It fills req and returns served, or the
// reason to hand the connection off (b may hold the request only in part).
// Once the head is whole, req.head is its length and req's method, path
// and headers are set, even when the body is not all there. It never
// reads past b.
func parse(b []byte, bufSize int, req *Request) reason {
	req.Method, req.Path, req.Body, req.Close = nil, nil, nil, false
	req.fields, req.size, req.head = req.fields[:0], 0, 0

	line, rest, r := cutLine(b)
	if r != served {
		return r
	}
	// Request line: method SP origin-form SP HTTP/1.1
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || !isToken(line[:sp]) {
		return malformed
	}
	req.Method = line[:sp]
	if string(req.Method) == "HEAD" {
		return unsupported // an answer without a body; routes need not know
	}
	line = line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return malformed
	}
	target, version := line[:sp], line[sp+1:]
	if string(version) != "HTTP/1.1" {
		return unsupported // HTTP/1.0, HTTP/2's preface, anything else
	}
	if target[0] != '/' {
		return unsupported // absolute-form, authority-form, asterisk-form
	}
	for i, c := range target {
		if c <= ' ' || c >= 0x7f {
			return malformed
		}
		if c == '?' || c == '#' {
			return unsupported
		}
		if c == '%' && (i+2 >= len(target) || !isHex(target[i+1]) || !isHex(target[i+2])) {
			return malformed // net/http rejects a bad escape
		}
	}
	req.Path = target

	hosts, length := 0, -1
	for {
		line, rest, r = cutLine(rest)
		if r != served {
			return r
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return malformed // obs-fold
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return malformed
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return malformed
			}
		}
		if len(req.fields) == maxFields {
			return tooLarge
		}
		req.fields = append(req.fields, field{name, value})
		switch {
		case equalFold(name, "Host"):
			hosts++
			if !validHost(value) {
				return malformed
			}
		case equalFold(name, "Content-Length"):
			if length >= 0 {
				return unsupported // net/http accepts equal repeats; not worth it here
			}
			n, ok := parseLength(value)
			if !ok {
				return malformed
			}
			length = n
		case equalFold(name, "Connection"):
			switch {
			case equalFold(value, "close"):
				req.Close = true
			case equalFold(value, "keep-alive"):
			default:
				return unsupported // upgrade, lists of tokens
			}
		case equalFold(name, "Transfer-Encoding"), equalFold(name, "Upgrade"),
			equalFold(name, "Expect"), equalFold(name, "Origin"):
			return unsupported
		}
	}
	if hosts != 1 {
		return malformed // net/http answers 400 to none or several
	}
	head := len(b) - len(rest)
	req.head = head
	if length < 0 {
		length = 0 // HTTP/1.1: no framing header means no body
	}
	if length > len(rest) {
		if head+length > bufSize {
			return tooLarge
		}
		return incomplete
	}
	req.Body = rest[:length:length]
	req.size = head + length
	return served
}

// cutLine splits off one CRLF-terminated line. It returns incomplete when
// b holds no LF yet and malformed for a bare LF (net/http tolerates it; the
// front leaves such clients to net/http).
func cutLine(b []byte) (line, rest []byte, r reason) {
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0:
		return nil, nil, incomplete
	case i == 0 || b[i-1] != '\r':
		return nil, nil, malformed
	}
	return b[:i-1], b[i+1:], served
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseLength accepts 1 to 9 digits: larger bodies never fit the buffer.
func parseLength(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validHost is a conservative subset of what net/http accepts in Host:
// letters, digits and the punctuation of names, IPv4 and IPv6 literals and
// ports. Anything else goes to net/http, which has the final word.
func validHost(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}
