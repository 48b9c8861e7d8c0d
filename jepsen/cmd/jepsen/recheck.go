package main

import (
	"fmt"
	"io"

	"github.com/seqsvr/seqsvr/jepsen/harness"
)

// recheck re-checks every scenario folder in dir, prints each verdict
// table and a summary, and returns the exit status: 0 only if every
// checker that ran passed. A planted-bug run is reported as caught or
// not, but its failing checkers still fail the re-check: the question
// here is whether the saved histories pass.
func recheck(w io.Writer, dir string) int {
	dirs, err := harness.ScenarioDirs(dir)
	if err != nil {
		fmt.Fprintf(w, "check: %v\n", err)
		return 2
	}
	var reports []*harness.Report
	code := 0
	for _, d := range dirs {
		rep, err := harness.Recheck(d)
		if err != nil {
			fmt.Fprintf(w, "check %s: %v\n", d, err)
			code = 2
			continue
		}
		fmt.Fprintln(w, rep.Table())
		if len(rep.Bugs) > 0 {
			if ok, why := harness.Caught(rep, rep.Bugs[0]); ok {
				fmt.Fprintf(w, "planted bug %s caught by: %s\n\n", rep.Bugs[0], why)
			} else {
				fmt.Fprintf(w, "planted bug %s NOT caught: %s\n\n", rep.Bugs[0], why)
			}
		}
		reports = append(reports, rep)
		if !rep.OK && code == 0 {
			code = 1
		}
	}
	summary(w, reports)
	return code
}
