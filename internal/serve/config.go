package serve

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvPrefix is put before every flag name to form its environment variable.
const EnvPrefix = "SEQSVR_"

// EnvName is the environment variable of a flag: SEQSVR_ + the name
// upper-cased with '-' as '_'.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// NewFlagSet returns a flag set whose usage text lists every flag with its
// environment variable. It uses ContinueOnError so Parse reports errors
// instead of exiting; main decides the exit code.
func NewFlagSet(name, summary string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: %s [flags]\n\n%s\n\nFlags (each also read from the environment variable shown; flags win):\n", name, summary)
		fs.VisitAll(func(f *flag.Flag) {
			typ, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(out, "  --%s %s\t[%s]\n    \t%s", f.Name, typ, EnvName(f.Name), strings.ReplaceAll(usage, "\n", "\n    \t"))
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" {
				fmt.Fprintf(out, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
	return fs
}

// Parse parses args, then fills every flag not given on the command line
// from its environment variable (looked up with getenv; nil means
// os.Getenv). It returns flag.ErrHelp for -h/--help after printing usage.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (all settings are --flags)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		env := EnvName(f.Name)
		v := getenv(env)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("environment %s=%q: %w", env, v, err))
		}
	})
	return errors.Join(errs...)
}

// SplitList splits a comma-separated flag value, dropping empty items and
// surrounding spaces.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
