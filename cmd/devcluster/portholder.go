package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// holder is a process listening on a TCP port.
type holder struct {
	Pid  int
	Name string // its command name ("" when unknown)
}

func (h holder) String() string {
	if h.Name == "" {
		return fmt.Sprintf("pid %d", h.Pid)
	}
	return fmt.Sprintf("pid %d (%s)", h.Pid, h.Name)
}

// portHolders names the processes listening on TCP port, where the
// system can tell: the listening sockets' inodes from procRoot/net/tcp
// and tcp6, found among the open files of procRoot/*/fd. A process of
// another user hides its files from a non-root caller; `ss -ltnp` is
// asked then, when present. Nil when nothing can be told.
func portHolders(procRoot string, port int) []holder {
	inodes := listenInodes(procRoot, port)
	if len(inodes) == 0 {
		return nil
	}
	if hs := inodeHolders(procRoot, inodes); len(hs) > 0 {
		return hs
	}
	return ssHolders(port)
}

// listenInodes are the socket inodes in the LISTEN state on port, from
// the kernel's socket tables (local address "HEXIP:HEXPORT", state 0A).
func listenInodes(procRoot string, port int) map[string]bool {
	inodes := map[string]bool{}
	for _, table := range []string{"net/tcp", "net/tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			if fields[9] != "0" {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	return inodes
}

// inodeHolders are the processes with an open file "socket:[INODE]" for
// one of inodes.
func inodeHolders(procRoot string, inodes map[string]bool) []holder {
	dirs, _ := os.ReadDir(procRoot)
	var hs []holder
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				comm, _ := os.ReadFile(filepath.Join(procRoot, d.Name(), "comm"))
				hs = append(hs, holder{Pid: pid, Name: strings.TrimSpace(string(comm))})
				break
			}
		}
	}
	return hs
}

// ssUser is one users:(("name",pid=N,fd=M)) entry of `ss -p`.
var ssUser = regexp.MustCompile(`\("([^"]*)",pid=(\d+),`)

func ssHolders(port int) []holder {
	ss, err := exec.LookPath("ss")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ss, "-Hltnp", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil {
		return nil
	}
	var hs []holder
	for _, m := range ssUser.FindAllStringSubmatch(string(out), -1) {
		pid, _ := strconv.Atoi(m[2])
		hs = append(hs, holder{Pid: pid, Name: m[1]})
	}
	return hs
}
