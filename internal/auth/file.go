package auth

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Entry is one token of the auth file.
type Entry struct {
	Name  string   `json:"name"`
	Token string   `json:"token"`
	Roles []string `json:"roles"`
}

// MinTokenLen is the shortest token accepted: short tokens can be guessed.
const MinTokenLen = 16

// token is an Entry as checked: the token's hash and its highest role.
type token struct {
	name string
	sum  [sha256.Size]byte
	role Role
}

// LoadFile reads an auth file: a JSON list of entries, each with a name,
// a token of at least MinTokenLen bytes and at least one known role.
// Names and tokens must be unique.
func LoadFile(path string) ([]token, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	return parse(b)
}

func parse(b []byte) ([]token, error) {
	var entries []Entry
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("auth file: %w", err)
	}
	if len(entries) == 0 {
		return nil, errors.New("auth file: no tokens (an empty list would refuse every call)")
	}
	names, sums := map[string]bool{}, map[[sha256.Size]byte]bool{}
	out := make([]token, 0, len(entries))
	for i, e := range entries {
		switch {
		case e.Name == "":
			return nil, fmt.Errorf("auth file: entry %d has no name", i+1)
		case names[e.Name]:
			return nil, fmt.Errorf("auth file: name %q listed twice", e.Name)
		case len(e.Token) < MinTokenLen:
			return nil, fmt.Errorf("auth file: token of %q is shorter than %d bytes", e.Name, MinTokenLen)
		case strings.ContainsAny(e.Token, " \t\r\n"):
			return nil, fmt.Errorf("auth file: token of %q contains white space", e.Name)
		case len(e.Roles) == 0:
			return nil, fmt.Errorf("auth file: %q has no roles", e.Name)
		}
		t := token{name: e.Name, sum: sha256.Sum256([]byte(e.Token))}
		if sums[t.sum] {
			return nil, fmt.Errorf("auth file: the token of %q is also another entry's", e.Name)
		}
		for _, r := range e.Roles {
			role, err := ParseRole(r)
			if err != nil {
				return nil, fmt.Errorf("auth file: %q: %w", e.Name, err)
			}
			t.role = max(t.role, role)
		}
		names[e.Name], sums[t.sum] = true, true
		out = append(out, t)
	}
	return out, nil
}
