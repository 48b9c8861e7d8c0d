//go:build faults

package faults

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

func init() {
	path := os.Getenv(HostsEnv)
	if path == "" {
		return
	}
	r, err := HostsResolver(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: %s: %v\n", HostsEnv, err)
		os.Exit(2)
	}
	net.DefaultResolver = r
}

// HostsResolver is a Go resolver that answers from the hosts file at path
// (read once) instead of the system's DNS servers: its Dial hands the
// resolver an in-memory DNS server. The machine's /etc/hosts is still
// read first, as for any Go resolver.
func HostsResolver(path string) (*net.Resolver, error) {
	hosts, err := readHosts(path)
	if err != nil {
		return nil, err
	}
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, hosts)
		return client, nil
	}}, nil
}

// readHosts reads "IP NAME..." lines; '#' starts a comment.
func readHosts(path string) (map[string][]net.IP, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hosts := map[string][]net.IP{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		ip := net.ParseIP(fields[0])
		if ip == nil || len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want \"IP NAME...\", got %q", path, n, sc.Text())
		}
		for _, name := range fields[1:] {
			key := strings.ToLower(strings.TrimSuffix(name, "."))
			hosts[key] = append(hosts[key], ip)
		}
	}
	return hosts, sc.Err()
}

// DNS wire-format constants (RFC 1035) the server needs.
const (
	dnsTypeA, dnsTypeAAAA = 1, 28
	dnsClassIN            = 1
	dnsFlagResponse       = 0x8000
	dnsFlagAuthoritative  = 0x0400
	dnsFlagRecursionDes   = 0x0100
	dnsFlagRecursionAvail = 0x0080
	dnsRcodeFormErr       = 1
	dnsRcodeNameErr       = 3
	dnsHeaderLen          = 12
)

var errBadQuery = errors.New("faults: malformed DNS query")

// serveDNS answers the queries the Go resolver sends over a stream
// connection (two-byte length prefix each) until it closes it.
func serveDNS(c net.Conn, hosts map[string][]net.IP) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := answer(q, hosts)
		if resp == nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// answer builds the response to query q: the A or AAAA records of its
// name, none for a name known only by the other family, "no such name"
// for an unknown one. Nil when q is too short to answer at all.
func answer(q []byte, hosts map[string][]net.IP) []byte {
	if len(q) < dnsHeaderLen {
		return nil
	}
	name, qEnd, err := question(q)
	resp := append([]byte{}, q[:2]...) // the query's ID
	flags := dnsFlagResponse | dnsFlagAuthoritative | dnsFlagRecursionAvail | int(binary.BigEndian.Uint16(q[2:4]))&dnsFlagRecursionDes
	if err != nil {
		flags |= dnsRcodeFormErr
		return append(binary.BigEndian.AppendUint16(resp, uint16(flags)), 0, 0, 0, 0, 0, 0, 0, 0)
	}
	qtype := binary.BigEndian.Uint16(q[qEnd-4 : qEnd-2])
	ips, known := hosts[name]
	var records [][]byte
	for _, ip := range ips {
		switch v4 := ip.To4(); {
		case qtype == dnsTypeA && v4 != nil:
			records = append(records, v4)
		case qtype == dnsTypeAAAA && v4 == nil:
			records = append(records, ip.To16())
		}
	}
	if !known {
		flags |= dnsRcodeNameErr
	}
	resp = binary.BigEndian.AppendUint16(resp, uint16(flags))
	resp = binary.BigEndian.AppendUint16(resp, 1) // the question, echoed
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(records)))
	resp = append(resp, 0, 0, 0, 0) // no authority, no additional records
	resp = append(resp, q[dnsHeaderLen:qEnd]...)
	for _, rd := range records {
		resp = append(resp, 0xc0, dnsHeaderLen) // the name: a pointer to the question's
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, dnsClassIN)
		resp = binary.BigEndian.AppendUint32(resp, 0) // TTL: nothing caches it
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rd)))
		resp = append(resp, rd...)
	}
	return resp
}

// question reads the first question of q: its name (lower case, no
// trailing dot) and the offset just past its type and class.
func question(q []byte) (string, int, error) {
	if binary.BigEndian.Uint16(q[4:6]) < 1 {
		return "", 0, errBadQuery
	}
	var labels []string
	i := dnsHeaderLen
	for {
		if i >= len(q) {
			return "", 0, errBadQuery
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return "", 0, errBadQuery
		}
		labels = append(labels, strings.ToLower(string(q[i:i+l])))
		i += l
	}
	if i+4 > len(q) {
		return "", 0, errBadQuery
	}
	return strings.Join(labels, "."), i + 4, nil
}
