package harness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Timeline is when the upgrade scenario ran which binary where, and what
// cluster version the members showed meanwhile, saved in final.json with
// the rest of Upgrade, so that -check judges the timing again.
//
// The rule it checks (guarantee 11, docs/upgrading.md): the cluster
// version is raised to a level only while every member of the Raft
// configuration runs a binary of at least that level, and it is raised
// to the new binary's level once every member runs it, unless the
// operator holds it (--cluster-version-hold). The allocsvrs are not
// members of the configuration: they are recorded, not judged.
type Timeline struct {
	// Binaries are the process starts, in order: each member's start on
	// the base binary, each swap, restart and rollback.
	Binaries []BinaryStart `json:"binaries"`
	// Versions are the members' ClusterStatus answers, polled through
	// the run.
	Versions []VersionSample `json:"versions"`
	// Hold is the lowest --cluster-version-hold any storesvr was started
	// with or answered with (0: none). The scenario sets none, so it
	// stays 0; with one, the version need not reach the new level.
	Hold uint32 `json:"hold,omitempty"`
}

// Binary kinds of a BinaryStart.
const (
	binaryBase = "base"
	binaryNew  = "new"
)

// BinaryStart is a process started on a binary at At (the run clock, read
// just before the exec: from then on the member runs it).
type BinaryStart struct {
	At     time.Duration `json:"at"`
	Member string        `json:"member"`
	Store  bool          `json:"store"` // a storesvr: a member of the configuration
	Binary string        `json:"binary"`
	Level  uint32        `json:"level"` // the binary's feature level
	Why    string        `json:"why"`   // "launch", the fault name
}

// VersionSample is one member's ClusterStatus answer, asked at At and
// answered at Ret (the run clock).
type VersionSample struct {
	At     time.Duration `json:"at"`
	Ret    time.Duration `json:"ret"`
	Member string        `json:"member"`
	// ClusterVersion is what the member's own state says; 0 when it
	// does not say (a base-release member knows no cluster version).
	ClusterVersion uint32 `json:"cluster_version"`
	Hold           uint32 `json:"hold,omitempty"`
	// Levels are the feature levels the answer shows per member.
	Levels map[string]uint32 `json:"levels,omitempty"`
}

// levelAt is each storesvr's binary level at t (the latest start at or
// before t); a member with no start by then is absent.
func (tl *Timeline) levelAt(t time.Duration) map[string]uint32 {
	out := map[string]uint32{}
	for _, b := range tl.Binaries {
		if b.Store && b.At <= t {
			out[b.Member] = b.Level
		}
	}
	return out
}

// members are the storesvrs the timeline names.
func (tl *Timeline) members() []string {
	var out []string
	for _, b := range tl.Binaries {
		if b.Store && !slices.Contains(out, b.Member) {
			out = append(out, b.Member)
		}
	}
	return out
}

// allAt reports whether every storesvr runs a binary of at least level
// at t.
func (tl *Timeline) allAt(t time.Duration, level uint32) bool {
	at := tl.levelAt(t)
	for _, m := range tl.members() {
		if l, ok := at[m]; !ok || l < level {
			return false
		}
	}
	return true
}

// raise is the cluster version reaching Level, first shown by an answer
// that returned at Seen.
type raise struct {
	Level  uint32
	Seen   time.Duration
	Member string
}

// raises are the levels the cluster version reached, in order, each with
// the first answer that showed it: the raise happened at or before then.
func (tl *Timeline) raises() []raise {
	vs := slices.Clone(tl.Versions)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Ret < vs[j].Ret })
	top := fsm.BaseLevel
	var out []raise
	for _, v := range vs {
		if v.ClusterVersion > top {
			top = v.ClusterVersion
			out = append(out, raise{Level: top, Seen: v.Ret, Member: v.Member})
		}
	}
	return out
}

// check is what is wrong with the timing, and a summary of it.
//
// A raise to level L first seen at S happened at some moment up to S. It
// fails when no moment from the run's start to S had every storesvr on a
// binary of level L or more: then it certainly happened while one ran a
// binary that does not support L. (Judging by the earliest moment it may
// have happened keeps a raise polled a moment late from looking early;
// the poll runs every upgradePollEvery, far less than a swap takes.)
//
// Once every storesvr runs the new binary, the version must reach its
// level (the lowest of theirs at that moment) by the end of the run,
// unless a hold keeps it lower: then it must reach the hold.
func (tl *Timeline) check() (problems []string, summary string) {
	if len(tl.members()) == 0 {
		return []string{"the timeline names no storesvr"}, ""
	}
	raises := tl.raises()
	starts := []time.Duration{0}
	for _, b := range tl.Binaries {
		starts = append(starts, b.At)
	}
	var seen []string
	for _, r := range raises {
		legal := false
		for _, t := range starts {
			legal = legal || t <= r.Seen && tl.allAt(t, r.Level)
		}
		if !legal {
			problems = append(problems, fmt.Sprintf("cluster version %d seen on %s at %s while a storesvr still ran a binary below level %d (%s)",
				r.Level, r.Member, r.Seen.Round(time.Millisecond), r.Level, tl.binariesAt(r.Seen)))
		}
		seen = append(seen, fmt.Sprintf("%d seen at %s", r.Level, r.Seen.Round(100*time.Millisecond)))
	}
	allNew, want := time.Duration(-1), tl.topLevel()
	for _, t := range starts {
		if want > fsm.BaseLevel && tl.allAt(t, want) {
			allNew = t
			break
		}
	}
	reached := fsm.BaseLevel
	if len(raises) > 0 {
		reached = raises[len(raises)-1].Level
	}
	switch {
	case allNew < 0:
		summary = "every storesvr never ran the new binary at once"
	case tl.Hold != 0 && tl.Hold < want:
		summary = fmt.Sprintf("all storesvrs on level %d from %s, held at %d", want, allNew.Round(100*time.Millisecond), tl.Hold)
		want = max(tl.Hold, fsm.BaseLevel)
	default:
		summary = fmt.Sprintf("all storesvrs on level %d from %s", want, allNew.Round(100*time.Millisecond))
	}
	if allNew >= 0 && reached < want {
		problems = append(problems, fmt.Sprintf("cluster version never raised to %d (highest seen %d in %d answers) though every storesvr ran a level-%d binary from %s",
			want, reached, len(tl.Versions), tl.topLevel(), allNew.Round(time.Millisecond)))
	}
	if len(seen) == 0 {
		seen = append(seen, "never raised")
	}
	return problems, summary + "; cluster version " + strings.Join(seen, ", ") + fmt.Sprintf(" (%d answers)", len(tl.Versions))
}

// topLevel is the highest level of any binary a storesvr ran.
func (tl *Timeline) topLevel() uint32 {
	top := uint32(0)
	for _, b := range tl.Binaries {
		if b.Store {
			top = max(top, b.Level)
		}
	}
	return top
}

// binariesAt lists the storesvrs' binaries at t, for a verdict.
func (tl *Timeline) binariesAt(t time.Duration) string {
	at := map[string]string{}
	for _, b := range tl.Binaries {
		if b.Store && b.At <= t {
			at[b.Member] = fmt.Sprintf("%s %s (level %d)", b.Member, b.Binary, b.Level)
		}
	}
	var out []string
	for _, m := range tl.members() {
		out = append(out, at[m])
	}
	return strings.Join(out, ", ")
}
