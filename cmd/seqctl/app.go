package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/version"
)

type app struct {
	getenv         func(string) string
	stdout, stderr io.Writer
	g              globals
}

// command is one seqctl command. setup adds the command's own flags and
// returns what runs it with the positional arguments.
type command struct {
	path     string // "tag create"
	args     string // "TAG [flags]"
	summary  string
	min, max int // positional arguments
	setup    func(fs *flag.FlagSet) func(a *app, ctx context.Context, args []string) error
}

var commands []command

func (a *app) main(args []string) int {
	if err := a.g.defaults(a.getenv); err != nil {
		return a.fail(usageError{err.Error()})
	}
	top := flag.NewFlagSet("seqctl", flag.ContinueOnError)
	a.g.register(top)
	top.SetOutput(io.Discard)
	if err := top.Parse(args); err != nil {
		return a.fail(usageError{err.Error()})
	}
	if a.g.version {
		fmt.Fprintln(a.stdout, version.Line("seqctl"))
		return exitOK
	}
	rest := top.Args()
	cmd, words := match(rest)
	if cmd == nil {
		if a.g.help || len(rest) == 0 {
			a.usage(a.stdout, strings.Join(rest, " "))
			if a.g.help {
				return exitOK
			}
			return exitUsage
		}
		if words > 0 && (slices.Contains(rest, "--help") || slices.Contains(rest, "-help") || slices.Contains(rest, "-h")) {
			a.usage(a.stdout, strings.Join(rest[:words], " "))
			return exitOK
		}
		return a.fail(usagef("unknown command %q", strings.Join(rest, " ")))
	}
	fs := flag.NewFlagSet("seqctl "+cmd.path, flag.ContinueOnError)
	a.g.register(fs)
	exec := cmd.setup(fs)
	pos, err := parse(fs, rest[words:])
	if a.g.help || errors.Is(err, flag.ErrHelp) {
		a.commandUsage(a.stdout, cmd)
		return exitOK
	}
	if a.g.version {
		fmt.Fprintln(a.stdout, version.Line("seqctl"))
		return exitOK
	}
	if err != nil {
		return a.fail(usageError{err.Error()})
	}
	if len(pos) < cmd.min || len(pos) > cmd.max {
		return a.fail(usagef("usage: seqctl %s %s", cmd.path, cmd.args))
	}
	if err := a.g.check(); err != nil {
		return a.fail(usageError{err.Error()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.g.timeout)
	defer cancel()
	return a.fail(exec(a, ctx, pos))
}

// match finds the command named by the first words of args, and how many
// words matched (of a group such as "tag" when no command matched).
func match(args []string) (*command, int) {
	words := 0
	for i := range commands {
		c := &commands[i]
		p := strings.Fields(c.path)
		if len(args) >= len(p) && strings.Join(args[:len(p)], " ") == c.path {
			return c, len(p)
		}
		if len(args) > 0 && p[0] == args[0] {
			words = 1
		}
	}
	return nil, words
}

// fail prints err and returns its exit code.
func (a *app) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ce configError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "seqctl: %s\n(run seqctl --help for the commands and flags)\n", ue.msg)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(a.stderr, "seqctl: %v\n", ce.err)
		return exitUsage
	}
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		fmt.Fprintf(a.stderr, "seqctl: %s: %s\n", cerr.Code(), cerr.Message())
	} else {
		fmt.Fprintf(a.stderr, "seqctl: %v\n", err)
	}
	return exitCall
}

// configError is local configuration that cannot work (an unreadable
// token or CA file, no --store): exit code 2.
type configError struct{ err error }

func (c configError) Error() string { return c.err.Error() }

func (a *app) usage(w io.Writer, group string) {
	fmt.Fprint(w, `seqctl: the command line for seqsvr.

Usage: seqctl [flags] COMMAND [ARGS] [flags]

Commands:
`)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, g := range []string{"tag", "space", "member", "status", "backup", "next", "snowflake", "decode", "seq"} {
		for _, c := range commands {
			first, _, _ := strings.Cut(c.path, " ")
			if first != g || group != "" && !strings.HasPrefix(c.path+" ", group+" ") {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(c.path+" "+c.args), c.summary)
		}
	}
	tw.Flush()
	fmt.Fprint(w, "\nFlags (before or after the command; each also read from the variable shown):\n")
	a.flagUsage(w)
	fmt.Fprint(w, `
seqctl COMMAND --help shows the command's own flags.

Exit codes: 0 success; 1 a call failed (stderr: "seqctl: CODE: message", CODE a
Connect code such as not_found or unavailable); 2 bad command line or local
configuration. -o json prints the API's JSON (protojson: int64 as strings).
`)
}

func (a *app) commandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: seqctl %s %s\n\n%s\n\nFlags (the global ones too, see seqctl --help):\n", c.path, c.args, c.summary)
	fs := flag.NewFlagSet(c.path, flag.ContinueOnError)
	c.setup(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// flagUsage prints the global flags (defaults, not values from the
// environment: a token must not end up in a help text).
func (a *app) flagUsage(w io.Writer) {
	fs := flag.NewFlagSet("seqctl", flag.ContinueOnError)
	var g globals
	g.output, g.timeout = "table", 10*time.Second
	g.register(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
