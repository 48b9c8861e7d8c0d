package launchtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// attackConn is one attacking connection.
type attackConn struct {
	net.Conn
	tg      Target
	h2      bool
	refused int // HTTP/2 streams the server refused
}

// attackDialTimeout bounds an attacking connection's TCP connect. The
// dial is not what a shape measures (its hold starts once connected), and
// 200 connects at once on a loaded 2-core box waited out SYN retransmits
// (1 s, then 3 s more) past DialerFrom's 5 s: "dial: i/o timeout" in the
// TLS h2-streams shape, a failure that says nothing about the limits.
const attackDialTimeout = 30 * time.Second

// dialAttack connects from 127.0.0.1; each shape then runs the TLS
// handshake (secure) with the ALPN protocol it speaks.
func dialAttack(ctx context.Context, tg Target) (*attackConn, error) {
	d := DialerFrom("127.0.0.1")
	d.Timeout = attackDialTimeout
	c, err := d.DialContext(ctx, "tcp", tg.Addr)
	if err != nil {
		return nil, err
	}
	return &attackConn{Conn: c, tg: tg}, nil
}

// secure runs the TLS handshake, offering proto by ALPN.
func (a *attackConn) secure(proto string) error {
	if a.tg.TLS == nil {
		return nil
	}
	cfg := a.tg.TLS.Clone()
	cfg.NextProtos = []string{proto}
	if host, _, err := net.SplitHostPort(a.tg.Addr); err == nil && cfg.ServerName == "" {
		cfg.ServerName = host
	}
	tc := tls.Client(a.Conn, cfg)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	_ = tc.SetDeadline(time.Time{})
	if got := tc.ConnectionState().NegotiatedProtocol; got != proto && !(proto == "http/1.1" && got == "") {
		return fmt.Errorf("ALPN chose %q, want %q", got, proto)
	}
	a.Conn = tc
	return nil
}

// head is an HTTP/1.1 request head for the target's procedure.
func (a *attackConn) head(token string, framing string) string {
	h := "POST " + a.tg.Path + " HTTP/1.1\r\nHost: " + a.tg.Addr + "\r\nContent-Type: application/proto\r\n" + framing + "\r\n"
	if token != "" {
		h += "Authorization: Bearer " + token + "\r\n"
	}
	return h + "\r\n"
}

// readAnswer reads an HTTP/1.1 answer's status line, then everything
// until the server closes (within the bound plus slack: the caller
// measures), and reports whether it said Connection: close.
func (a *attackConn) readAnswer() (status string, closing bool, err error) {
	_ = a.SetReadDeadline(time.Now().Add(a.tg.BodyTimeout + 2*AttackSlack))
	br := bufio.NewReader(a.Conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", false, closedOK(err)
	}
	status = strings.TrimRight(line, "\r\n")
	for {
		l, err := br.ReadString('\n')
		if err != nil || l == "\r\n" {
			break
		}
		if strings.EqualFold(strings.TrimSpace(l), "Connection: close") {
			closing = true
		}
	}
	_, err = io.Copy(io.Discard, br)
	return status, closing, closedOK(err)
}

// closedOK is nil for the ends of a connection the server closed (EOF or
// a reset for the bytes it did not read); a timeout is the error.
func closedOK(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil
	}
	return err
}

func isReset(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && (strings.Contains(se.Error(), "reset") || strings.Contains(se.Error(), "broken pipe"))
}

// writeBody writes n bytes (of a larger declared body) in 16 KiB pieces,
// ignoring a server that closed under it.
func (a *attackConn) writeBody(n int) {
	piece := make([]byte, 16<<10)
	for n > 0 {
		k := min(n, len(piece))
		if _, err := a.Write(piece[:k]); err != nil {
			return
		}
		n -= k
	}
}

func noTokenStall(a *attackConn) (string, error) {
	if err := a.secure("http/1.1"); err != nil {
		return "", err
	}
	if _, err := io.WriteString(a, a.head("", "Content-Length: 1048576")); err != nil {
		return "", err
	}
	go a.writeBody(256 << 10)
	status, closing, err := a.readAnswer()
	if err == nil && status != "" && !closing {
		err = errors.New("no Connection: close on the refusal")
	}
	return status, err
}

func tokenStall(a *attackConn) (string, error) {
	if err := a.secure("http/1.1"); err != nil {
		return "", err
	}
	if _, err := io.WriteString(a, a.head(a.tg.Token, "Content-Length: 1048576")); err != nil {
		return "", err
	}
	go a.writeBody(64 << 10)
	status, _, err := a.readAnswer()
	return status, err
}

func chunkedTrickle(a *attackConn) (string, error) {
	if err := a.secure("http/1.1"); err != nil {
		return "", err
	}
	if _, err := io.WriteString(a, a.head(a.tg.Token, "Transfer-Encoding: chunked")); err != nil {
		return "", err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if _, err := io.WriteString(a, "1\r\nx\r\n"); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(1500 * time.Millisecond):
			}
		}
	}()
	status, _, err := a.readAnswer()
	return status, err
}
