package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// Files of a results folder that a re-check reads.
const (
	historyFile = "history.jsonl"
	finalFile   = "final.json"
	nemesisFile = "nemesis.jsonl"
	summaryFile = "summary.json"
)

// SaveInputs writes what Check reads, in the form LoadInputs reads back:
// history.jsonl and, when in.Final is set, final.json.
func SaveInputs(dir string, in Inputs) error {
	if err := history.WriteJSONL(filepath.Join(dir, historyFile), in.Ops); err != nil {
		return err
	}
	if in.Final == nil {
		return nil
	}
	js, err := json.MarshalIndent(in.Final, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, finalFile), append(js, '\n'), 0o644)
}

// LoadInputs reads what a run saved in dir (one scenario's folder). A
// folder without final.json loads with a nil Final.
func LoadInputs(dir string) (Inputs, error) {
	ops, err := history.ReadJSONL(filepath.Join(dir, historyFile))
	if err != nil {
		return Inputs{}, err
	}
	in := Inputs{Ops: ops}
	js, err := os.ReadFile(filepath.Join(dir, finalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return in, nil
	}
	if err != nil {
		return Inputs{}, err
	}
	f := &Final{}
	if err := json.Unmarshal(js, f); err != nil {
		return Inputs{}, fmt.Errorf("%s: %w", finalFile, err)
	}
	// A half-written final.json must not decode IDs with a zero layout
	// and pass vacuously.
	if err := f.validate(); err != nil {
		return Inputs{}, fmt.Errorf("%s: incomplete: %w", finalFile, err)
	}
	in.Final = f
	return in, nil
}

func saveNemesis(dir string, l *nemesis.Log) error {
	f, err := os.Create(filepath.Join(dir, nemesisFile))
	if err != nil {
		return err
	}
	if err := l.WriteJSONL(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loadEvents reads dir's nemesis.jsonl: the injections counted the way
// nemesis.Log.Counts does, and the events themselves. A run without
// faults may have none.
func loadEvents(dir string) (map[string]int, int, []nemesis.Event, error) {
	m := map[string]int{}
	var evs []nemesis.Event
	f, err := os.Open(filepath.Join(dir, nemesisFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, err
	}
	defer f.Close()
	n := 0
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		var e nemesis.Event
		if err := dec.Decode(&e); err != nil {
			return nil, 0, nil, fmt.Errorf("%s: %w", nemesisFile, err)
		}
		evs = append(evs, e)
		if e.Phase == "inject" {
			m[e.Fault]++
			n++
		}
	}
	return m, n, evs, nil
}

// ScenarioDirs lists the scenario folders in dir: dir itself if it holds
// a history, else those of its subfolders that do (a run's folder).
func ScenarioDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, historyFile)); err == nil {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, historyFile)); err == nil {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s in it or in its subfolders", dir, historyFile)
	}
	sort.Strings(out)
	return out, nil
}

// Recheck runs every checker again on what a run saved in dir (one
// scenario's folder) and reports as the live run did. The run's name,
// seed, planted bugs and notes come from its summary.json when there is
// one; Elapsed is the re-check's own time.
func Recheck(dir string) (*Report, error) {
	started := time.Now()
	in, err := LoadInputs(dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{Name: filepath.Base(dir), OutDir: dir}
	var saved *Report
	if js, err := os.ReadFile(filepath.Join(dir, summaryFile)); err == nil {
		saved = &Report{}
		if err := json.Unmarshal(js, saved); err != nil {
			return nil, fmt.Errorf("%s: %w", summaryFile, err)
		}
		rep.Name, rep.Seed, rep.Bugs = saved.Name, saved.Seed, saved.Bugs
		rep.Notes = append(rep.Notes, saved.Notes...)
	}
	var evs []nemesis.Event
	if rep.Faults, rep.FaultTotal, evs, err = loadEvents(dir); err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, "re-checked offline from the saved files")
	if note := recompareRaftLogs(dir, in.Final); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	in.Events = evs
	rep.check(in)
	rep.FaultKinds = faultFigures(evs, in.Ops)
	rep.Margins = nemesis.MarginHits(evs)
	if saved != nil {
		rep.Notes = append(rep.Notes, changedVerdicts(saved.Results, rep.Results)...)
		rep.Notes = append(rep.Notes, carrySavedFailures(saved.Results, rep.Results)...)
		for _, v := range rep.Results {
			rep.OK = rep.OK && (v.OK || v.Skipped != "")
		}
	}
	rep.Elapsed = time.Since(started)
	return rep, nil
}

// changedVerdicts notes every checker that ran now and whose verdict
// differs from the saved one: the checkers or the saved files changed.
func changedVerdicts(saved, now []Verdict) []string {
	was := map[string]bool{}
	for _, v := range saved {
		if v.Skipped == "" {
			was[v.Name] = v.OK
		}
	}
	var out []string
	for _, v := range now {
		ok, had := was[v.Name]
		if v.Skipped == "" && had && ok != v.OK {
			out = append(out, fmt.Sprintf("%s: the saved summary says %s, the re-check %s", v.Name, word(ok), word(v.OK)))
		}
	}
	return out
}

// carrySavedFailures keeps a failure the run recorded for a checker that
// cannot run again now (skipped for want of saved data): the re-check must
// not turn a failed run into a pass. It replaces such verdicts in now and
// returns a note for each.
func carrySavedFailures(saved, now []Verdict) []string {
	failed := map[string]Verdict{}
	for _, v := range saved {
		if v.Skipped == "" && !v.OK {
			failed[v.Name] = v
		}
	}
	var notes []string
	for i, v := range now {
		if f, ok := failed[v.Name]; ok && v.Skipped != "" {
			f.Detail = "as saved (cannot re-run: " + v.Skipped + "): " + f.Detail
			now[i] = f
			notes = append(notes, v.Name+": failed in the saved run and cannot be re-checked; the failure stands")
		}
	}
	return notes
}

func word(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// recompareRaftLogs compares the members' raft logs again when the run
// kept them (raft-kept/, left when a checker failed), over the range the
// run compared: a fix to the comparison is then checked on the folders it
// failed.
func recompareRaftLogs(dir string, f *Final) string {
	kept := filepath.Join(dir, raftKeptDir)
	if f == nil || f.RaftLogs == nil || len(f.RaftLogs.Members) == 0 {
		return ""
	}
	if _, err := os.Stat(kept); err != nil {
		return ""
	}
	f.RaftLogs = compareRaftLogs(kept, f.RaftLogs.Members, f.RaftLogs.To)
	return "raft logs compared again from " + kept
}
