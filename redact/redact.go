// Package redact keeps secrets from leaving the process. A Redactor knows
// every secret a run holds (provider keys, MCP header values, the ${VAR}s a
// task file expands, environment variables whose names look secret) and
// replaces each with [redacted] wherever it appears, also inside a longer
// string. It is applied at every boundary where text is stored, printed,
// exported or shown to a model: error texts, the event log and run database,
// the terminal, --json output, tool results, traces and the web UI.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Placeholder replaces every secret.
const Placeholder = "[redacted]"

// MinLength is the shortest value treated as a secret. Shorter values
// ("1", "true", "dev") would blank out ordinary text wherever they occur,
// and no real key or token is that short.
const MinLength = 6

// A Redactor replaces known secrets in text. The zero value and a nil
// *Redactor know no secrets and return text unchanged. A Redactor is safe
// for concurrent use; secrets can be added while it is in use.
type Redactor struct {
	mu       sync.RWMutex
	secrets  map[string]bool
	replacer *strings.Replacer // nil until a secret is known
}

// New returns a Redactor that knows secrets.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add teaches r more secrets. Values shorter than MinLength, and values
// that occur inside Placeholder itself, are ignored; so is everything on a
// nil Redactor.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		if len(s) < MinLength || strings.Contains(Placeholder, s) {
			continue
		}
		for _, form := range forms(s) {
			if len(form) < MinLength || strings.Contains(Placeholder, form) || r.secrets[form] {
				continue
			}
			if r.secrets == nil {
				r.secrets = map[string]bool{}
			}
			r.secrets[form] = true
			changed = true
		}
	}
	if changed {
		r.replacer = newReplacer(r.secrets)
	}
}

// forms are the ways a secret can appear in text ratchet writes: as it is;
// as it appears inside a JSON string (escaped), since logs are JSON; and
// encoded as a model, a tool or a server may pass it on: base64 (standard
// and URL-safe, alone or inside a longer encoding at each of the three
// alignments), hex in either case, percent-encoded, and reversed.
func forms(s string) []string {
	quoted, _ := json.Marshal(s)
	out := []string{s, string(quoted[1 : len(quoted)-1])}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(s)))
		out = append(out, base64Cores(enc, s)...)
	}
	h := hex.EncodeToString([]byte(s))
	out = append(out, h, strings.ToUpper(h), url.QueryEscape(s), url.PathEscape(s), reverse(s))
	slices.Sort(out)
	return slices.Compact(out)
}

// base64Cores are the parts of the encoding of s that do not depend on
// what surrounds it, when it starts 0, 1 or 2 bytes into a 3-byte group of
// a longer encoded text: the characters that mix in a neighbour's bits are
// left out at each end.
func base64Cores(enc *base64.Encoding, s string) []string {
	var out []string
	for lead := range 3 {
		e := enc.WithPadding(base64.NoPadding).EncodeToString(append(make([]byte, lead), s...))
		from := []int{0, 2, 3}[lead] // characters 0..from-1 hold the lead bytes' bits
		to := len(e)
		if (lead+len(s))%3 != 0 {
			to-- // the last character holds bits of what follows
		}
		if from < to {
			out = append(out, e[from:to])
		}
	}
	return out
}

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// newReplacer orders secrets longest first, so that a secret containing
// another is replaced whole (strings.Replacer prefers earlier arguments
// among matches at one position).
func newReplacer(secrets map[string]bool) *strings.Replacer {
	list := make([]string, 0, len(secrets))
	for s := range secrets {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(list))
	for _, s := range list {
		pairs = append(pairs, s, Placeholder)
	}
	return strings.NewReplacer(pairs...)
}

// String returns s with every known secret replaced by Placeholder.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep, n := r.replacer, len(r.secrets)
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	// A replacement can join the text around it into a new occurrence
	// (secrets "ab…" and "]x…" in "ab…x…"), so repeat until nothing
	// changes. Every pass shortens the text outside placeholders, so it
	// settles quickly; the bound only guards against a mistake here.
	for range n + 1 {
		out := rep.Replace(s)
		if out == s {
			break
		}
		s = out
	}
	return s
}

// Bytes is String for byte slices; it returns b itself when nothing
// needed replacing.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	s := string(b)
	out := r.String(s)
	if out == s {
		return b
	}
	return []byte(out)
}

// Error returns err with its text redacted; errors.Is and errors.As still
// see the original chain. A nil err stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Len reports how many secret forms r knows (each secret has several: see
// forms).
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.secrets)
}

// SecretName reports whether an environment variable's name looks like it
// holds a secret: *_KEY, *_TOKEN, *_SECRET (and the bare KEY, TOKEN and
// SECRET), or anything containing PASSWORD, in any case.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	if strings.Contains(n, "PASSWORD") {
		return true
	}
	for _, suffix := range []string{"KEY", "TOKEN", "SECRET"} {
		if n == suffix || strings.HasSuffix(n, "_"+suffix) {
			return true
		}
	}
	return false
}

// FromEnviron returns the values of the variables in env (as os.Environ
// gives them, NAME=value) whose names look secret.
func FromEnviron(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && value != "" && SecretName(name) {
			out = append(out, value)
		}
	}
	return out
}
