package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"
)

// TestJudgeRules states Judge's rule for every Connect code and each
// caller: R = retried, D = definite (took no effect), "-" = neither.
func TestJudgeRules(t *testing.T) {
	rules := []struct {
		code                    connect.Code
		store, alloc, snowflake string
	}{
		{connect.CodeCanceled, "R", "R", "R"},
		{connect.CodeUnknown, "R", "R", "R"},
		{connect.CodeInvalidArgument, "D", "D", "D"},
		{connect.CodeDeadlineExceeded, "R", "R", "R"},
		{connect.CodeNotFound, "D", "D", "D"},
		{connect.CodeAlreadyExists, "D", "D", "D"},
		{connect.CodePermissionDenied, "D", "D", "D"},
		{connect.CodeResourceExhausted, "D", "D", "D"},
		{connect.CodeFailedPrecondition, "D", "D", "RD"},
		{connect.CodeAborted, "R", "R", "R"},
		{connect.CodeOutOfRange, "D", "D", "D"},
		{connect.CodeUnimplemented, "D", "D", "D"},
		{connect.CodeInternal, "-", "R", "R"},
		{connect.CodeUnavailable, "R", "R", "R"},
		{connect.CodeDataLoss, "-", "R", "R"},
		{connect.CodeUnauthenticated, "D", "D", "D"},
	}
	if len(rules) != 16 {
		t.Fatalf("%d rules, want one per Connect code", len(rules))
	}
	show := func(v Verdict) string {
		s := ""
		if v.Retry {
			s += "R"
		}
		if v.Definite {
			s += "D"
		}
		if s == "" {
			s = "-"
		}
		return s
	}
	for _, r := range rules {
		for c, want := range map[Caller]string{StoreCall: r.store, AllocCall: r.alloc, SnowflakeCall: r.snowflake} {
			// The same rule whether the code comes from the wire, from
			// connect-go's client itself, or through FromConnect.
			for _, err := range []error{
				connect.NewWireError(r.code, errors.New("from the server")),
				connect.NewError(r.code, errors.New("local")),
				FromConnect("call", connect.NewWireError(r.code, errors.New("from the server"))),
			} {
				v := Judge(c, err)
				if got := show(v); got != want {
					t.Errorf("Judge(%d, %v) = %s (%s), want %s", c, err, got, v.Why, want)
				}
				if v.Why == "" {
					t.Errorf("Judge(%d, %v) says no why", c, err)
				}
			}
		}
	}
}

func TestJudgeWithoutACode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Verdict
	}{
		{"transport", errors.New("connection refused"), Verdict{Retry: true}},
		{"attempt deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), Verdict{Retry: true}},
		{"attempt canceled", context.Canceled, Verdict{Retry: true}},
		{"kind", fmt.Errorf("%w: tag", NotFound), Verdict{Definite: true}},
		{"giving up wraps unavailable", fmt.Errorf("%w: no answer: %w", Unavailable, context.DeadlineExceeded), Verdict{Retry: true}},
	} {
		for _, c := range []Caller{StoreCall, AllocCall, SnowflakeCall} {
			got := Judge(c, tc.err)
			if got.Retry != tc.want.Retry || got.Definite != tc.want.Definite {
				t.Errorf("%s: Judge(%d) = %+v, want retry %v definite %v", tc.name, c, got, tc.want.Retry, tc.want.Definite)
			}
		}
	}
	if v := Judge(StoreCall, nil); v.Retry || v.Definite {
		t.Errorf("Judge(nil) = %+v", v)
	}
}
