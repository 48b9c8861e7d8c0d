package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// globals are the connection and output flags, accepted before the
// command and after it; each defaults to its SEQCTL_ variable.
type globals struct {
	store, alloc        string
	token, tokenFile    string
	ca, cert, key       string
	output              string
	timeout             time.Duration
	help, version, grpc bool
}

var globalFlags = []struct{ name, env, usage string }{
	{"store", "SEQCTL_STORE", "storesvr base URLs, comma-separated (any member; writes are forwarded to the leader)"},
	{"alloc", "SEQCTL_ALLOC", "allocsvr base URLs, comma-separated"},
	{"token", "SEQCTL_TOKEN", "bearer token (role client for IDs and reads, admin for changes)"},
	{"token-file", "SEQCTL_TOKEN_FILE", "file holding the bearer token (instead of --token)"},
	{"ca", "SEQCTL_CA", "CA file to trust for https:// (host:port URLs then mean https)"},
	{"cert", "SEQCTL_CERT", "client certificate, for stores that require one (--tls-client-ca)"},
	{"key", "SEQCTL_KEY", "the client certificate's key"},
	{"o", "SEQCTL_OUTPUT", "output: table or json"},
}

// defaults fills g from the SEQCTL_ variables.
func (g *globals) defaults(getenv func(string) string) error {
	for _, f := range globalFlags {
		*g.ptr(f.name) = getenv(f.env)
	}
	if g.output == "" {
		g.output = "table"
	}
	g.timeout = 10 * time.Second
	if v := getenv("SEQCTL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("SEQCTL_TIMEOUT: %v", err)
		}
		g.timeout = d
	}
	return nil
}

func (g *globals) ptr(name string) *string {
	return map[string]*string{"store": &g.store, "alloc": &g.alloc, "token": &g.token, "token-file": &g.tokenFile,
		"ca": &g.ca, "cert": &g.cert, "key": &g.key, "o": &g.output}[name]
}

// register adds the global flags to fs, their current values as defaults.
func (g *globals) register(fs *flag.FlagSet) {
	for _, f := range globalFlags {
		p := g.ptr(f.name)
		fs.StringVar(p, f.name, *p, f.usage+" ($"+f.env+")")
	}
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "deadline of the whole command ($SEQCTL_TIMEOUT)")
	fs.BoolVar(&g.grpc, "grpc", g.grpc, "speak gRPC to the allocsvrs instead of the Connect protocol")
	fs.BoolVar(&g.help, "help", false, "show help")
	fs.BoolVar(&g.help, "h", false, "show help")
	fs.BoolVar(&g.version, "version", false, "print the version")
}

func (g *globals) check() error {
	if g.output != "table" && g.output != "json" {
		return fmt.Errorf("-o %q: want table or json", g.output)
	}
	if g.token != "" && g.tokenFile != "" {
		return errors.New("--token and --token-file: give one")
	}
	if (g.cert == "") != (g.key == "") {
		return errors.New("--cert and --key go together")
	}
	if g.timeout <= 0 {
		return fmt.Errorf("--timeout %v must be positive", g.timeout)
	}
	return nil
}

// parse parses args with fs, letting flags and positional arguments mix
// ("tag get order -o json"); a "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
}

// usageError is a command-line mistake: exit code 2 with the usage.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
