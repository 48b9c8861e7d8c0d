package launchtest

import (
	"encoding/binary"
	"io"
	"sync"
	"time"
)

// h2Extra is how many streams over the cap each HTTP/2 connection opens.
const h2Extra = 2

// h2Streams opens H2MaxStreams+h2Extra streams, each a POST with a valid
// token, Content-Length 100 and 10 bytes of body, then waits until every
// stream was answered or reset.
func h2Streams(a *attackConn) (string, error) {
	if err := a.secure("h2"); err != nil {
		return "", err
	}
	var wmu sync.Mutex
	write := func(typ, flags byte, stream uint32, payload []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		var h [9]byte
		h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		h[3], h[4] = typ, flags
		binary.BigEndian.PutUint32(h[5:], stream)
		_, err := a.Write(append(h[:], payload...))
		return err
	}
	if _, err := io.WriteString(a, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		return "", err
	}
	if err := write(4, 0, 0, nil); err != nil {
		return "", err
	}
	scheme := "http"
	if a.tg.TLS != nil {
		scheme = "https"
	}
	n := a.tg.H2MaxStreams + h2Extra
	open := map[uint32]bool{}
	for i := range n {
		id := uint32(2*i + 1)
		open[id] = true
		var hb []byte
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", scheme}, {":path", a.tg.Path},
			{":authority", a.tg.Addr}, {"content-type", "application/proto"}, {"content-length", "100"},
			{"authorization", "Bearer " + a.tg.Token}} {
			hb = hpackLiteral(hb, f[0], f[1])
		}
		if err := write(1, 0x4, id, hb); err != nil {
			return "", err
		}
		if err := write(0, 0, id, make([]byte, 10)); err != nil {
			return "", err
		}
	}
	_ = a.SetReadDeadline(time.Now().Add(a.tg.BodyTimeout + 2*AttackSlack))
	var fh [9]byte
	for len(open) > 0 {
		if _, err := io.ReadFull(a, fh[:]); err != nil {
			return "", closedOK(err)
		}
		size := int(fh[0])<<16 | int(fh[1])<<8 | int(fh[2])
		typ, flags, id := fh[3], fh[4], binary.BigEndian.Uint32(fh[5:])&(1<<31-1)
		payload := make([]byte, size)
		if _, err := io.ReadFull(a, payload); err != nil {
			return "", closedOK(err)
		}
		switch typ {
		case 0, 1: // DATA, HEADERS
			if flags&0x1 != 0 {
				delete(open, id)
			}
		case 3: // RST_STREAM
			if code := binary.BigEndian.Uint32(payload); code == 1 || code == 7 { // PROTOCOL_ERROR, REFUSED_STREAM
				a.refused++
			}
			delete(open, id)
		case 4: // SETTINGS
			if flags&0x1 == 0 {
				_ = write(4, 0x1, 0, nil)
			}
		case 6: // PING
			if flags&0x1 == 0 {
				_ = write(6, 0x1, 0, payload)
			}
		case 7: // GOAWAY
			return "", nil
		}
	}
	return "", nil
}

// hpackLiteral appends a header field as a literal without indexing and
// with a literal name, no Huffman coding (RFC 7541, 6.2.2).
func hpackLiteral(b []byte, name, value string) []byte {
	b = append(b, 0)
	for _, s := range []string{name, value} {
		b = hpackInt(b, len(s))
		b = append(b, s...)
	}
	return b
}

// hpackInt appends n with a 7-bit prefix (RFC 7541, 5.1).
func hpackInt(b []byte, n int) []byte {
	if n < 127 {
		return append(b, byte(n))
	}
	b = append(b, 127)
	for n -= 127; n >= 128; n >>= 7 {
		b = append(b, byte(n%128+128))
	}
	return append(b, byte(n))
}
