package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/durable"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/storage/backup"
)

func init() {
	// "backup inspect" before "backup": the first path that matches wins.
	commands = append(commands,
		command{path: "backup inspect", args: "FILE", summary: "show what a backup file holds (exit 1 if it is corrupt, truncated, of a newer format, or breaks the store's rules, naming each problem)", min: 1, max: 1,
			setup: noFlags(func(a *app, _ context.Context, args []string) error { return a.inspectBackup(args[0]) })},
		command{path: "backup", args: "FILE|DIR/", summary: "write a consistent backup of the store, taken on the leader (role admin); into DIR/, a file named by the time, the newest --keep kept", min: 1, max: 1,
			setup: func(fs *flag.FlagSet) runFunc {
				keep := fs.Int("keep", 0, "with DIR/: remove the oldest backups of DIR beyond the newest N, once this one is written (0: keep all)")
				return func(a *app, ctx context.Context, args []string) error { return a.backupTo(ctx, args[0], *keep) }
			}},
	)
}

// backup streams the leader's backup into FILE: checked, then written
// through durable, so FILE is never a partial backup and survives a crash
// once backup returns.
func (a *app) backup(ctx context.Context, path string) error {
	var file []byte
	err := a.store(ctx, "Backup", func(ctx context.Context, s seqsvrv1connect.StoreServiceClient) error {
		stream, err := s.Backup(ctx, connect.NewRequest(&seqsvrv1.BackupRequest{}))
		if err != nil {
			return err
		}
		defer stream.Close()
		var buf bytes.Buffer
		for stream.Receive() {
			buf.Write(stream.Msg().GetData())
		}
		if err := stream.Err(); err != nil {
			return err
		}
		file = buf.Bytes()
		return nil
	})
	if err != nil {
		return err
	}
	b, err := backup.Decode(file)
	if err != nil {
		return fmt.Errorf("the store sent a bad backup: %w", err)
	}
	if err := durable.WriteFile(path, file, 0o600); err != nil {
		return err
	}
	return a.showBackup(backup.Summarize(b, len(file)), path, false)
}

func (a *app) inspectBackup(path string) error {
	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b, err := backup.Decode(file)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// What the file holds is shown whatever it holds; then every way it
	// breaks the store's rules, which a restore would refuse it for.
	if err := a.showBackup(backup.Summarize(b, len(file)), path, true); err != nil {
		return err
	}
	if ps := backup.Problems(b, time.Now()); len(ps) > 0 {
		lines := make([]string, len(ps))
		for i, p := range ps {
			lines[i] = "\n  " + errs.Detail(p)
		}
		return fmt.Errorf("%s: %w, which a restore refuses: %d problem(s):%s", path, backup.ErrInvalid, len(ps), strings.Join(lines, ""))
	}
	return nil
}

// showBackup prints the summary: JSON with -o json, else a few lines and,
// when all is set, the tags and spaces.
func (a *app) showBackup(s backup.Summary, path string, all bool) error {
	if a.g.output == "json" {
		out, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(a.stdout, string(out))
		return err
	}
	a.tableOut([]string{"FILE", "BYTES", "CLUSTER_ID", "GENERATION", "TIME", "RAFT_INDEX", "TERM", "TAGS", "TOMBSTONES", "SPACES", "WORKERS"}, [][]string{{
		path, fmt.Sprint(s.SizeBytes), s.ClusterID, d(s.Generation), s.Time.String(), u(s.RaftIndex), u(s.RaftTerm),
		fmt.Sprint(len(s.Tags)), fmt.Sprint(len(s.Tombstones)), fmt.Sprint(len(s.Spaces)), fmt.Sprint(s.Workers)}})
	if !all {
		return nil
	}
	var rows [][]string
	for _, t := range s.Tags {
		rows = append(rows, []string{t.Tag, "tag", d(t.MaxID), d(t.Step), d(t.PeakPerSec)})
	}
	for _, t := range s.Tombstones {
		rows = append(rows, []string{t.Tag, "tombstone", d(t.MaxID), "", d(t.PeakPerSec)})
	}
	for _, sp := range s.Spaces {
		rows = append(rows, []string{sp.Space, fmt.Sprintf("space (%d of %d sections raised, %d used keys)", sp.RaisedSections, sp.Sections, sp.UsedKeys), d(sp.MaxSeq), "", d(sp.PeakPerSec)})
	}
	if len(rows) > 0 {
		fmt.Fprintln(a.stdout)
		a.tableOut([]string{"NAME", "KIND", "MAX", "STEP", "PEAK_PER_SEC"}, rows)
	}
	return nil
}
