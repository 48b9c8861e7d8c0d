package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// jsonOut prints m as the API's JSON (protojson, every field present),
// indented by encoding/json: protojson varies its white space from build
// to build on purpose, and scripts diff outputs.
func (a *app) jsonOut(m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.stdout, out.String())
	return err
}

// tableOut prints rows under header, aligned; cells holding nothing print "-".
func (a *app) tableOut(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// out prints m as JSON with -o json, else the table.
func (a *app) out(m proto.Message, header []string, rows [][]string) error {
	if a.g.output == "json" {
		return a.jsonOut(m)
	}
	a.tableOut(header, rows)
	return nil
}

func ts(t *timestamppb.Timestamp) string {
	if t == nil || (t.GetSeconds() == 0 && t.GetNanos() == 0) {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

func d(n int64) string  { return fmt.Sprint(n) }
func u(n uint64) string { return fmt.Sprint(n) }
