package tagname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want string // "" = valid, else a substring of the error
	}{
		{"order", ""},
		{"a.b:c-d_e09", ""},
		{strings.Repeat("x", MaxLen), ""},
		{"", "empty"},
		{strings.Repeat("x", MaxLen+1), "129 bytes"},
		{"bad tag", "' ' at byte 3"},
		{"ünï", "at byte 0"},
		{"a/b", "'/'"},
	} {
		err := Check(tc.tag)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want valid", tc.tag, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want an error containing %q", tc.tag, err, tc.want)
		}
	}
}
