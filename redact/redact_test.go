package redact

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestString(t *testing.T) {
	r := New("sk-canary-123456", "hunter2!", "short", "p\"q\\w-secret")
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"key=sk-canary-123456", "key=[redacted]"},
		{"Bearer sk-canary-123456sk-canary-123456.", "Bearer [redacted][redacted]."},
		{"pw hunter2! and short", "pw [redacted] and short"}, // "short" is under MinLength
		{`{"v":"p\"q\\w-secret"}`, `{"v":"[redacted]"}`},     // the JSON-escaped form
		{`raw p"q\w-secret`, `raw [redacted]`},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLongestFirst(t *testing.T) {
	// The longer secret contains the shorter; replacing the shorter first
	// would leave the longer one's tail in the text.
	r := New("abcdef", "abcdefghij-tail")
	if got := r.String("x abcdefghij-tail y abcdef"); got != "x [redacted] y [redacted]" {
		t.Fatalf("got %q", got)
	}
}

func TestJoinedOccurrence(t *testing.T) {
	// Replacing "zzabcdef" joins "]" and "tail99" into the second secret.
	r := New("zzabcdef", "d]tail99")
	got := r.String("zzabcdef" + "tail99")
	if strings.Contains(got, "d]tail99") {
		t.Fatalf("a secret formed by a replacement survived: %q", got)
	}
}

func TestNilAndZero(t *testing.T) {
	var nilR *Redactor
	var zero Redactor
	for _, r := range []*Redactor{nilR, &zero} {
		if got := r.String("sk-anything-long"); got != "sk-anything-long" {
			t.Errorf("%v: got %q", r, got)
		}
		if r.Error(nil) != nil {
			t.Error("Error(nil) is not nil")
		}
	}
	zero.Add("now-a-secret")
	if got := zero.String("is now-a-secret"); got != "is [redacted]" {
		t.Errorf("after Add: %q", got)
	}
}

func TestPlaceholderFragmentsIgnored(t *testing.T) {
	r := New("redacted", "[redacted]")
	if r.Len() != 0 {
		t.Fatalf("a fragment of the placeholder was taken as a secret (%d known)", r.Len())
	}
}

func TestError(t *testing.T) {
	r := New("sk-canary-123456")
	base := fmt.Errorf("calling api with key sk-canary-123456: %w", fs.ErrPermission)
	err := r.Error(base)
	if strings.Contains(err.Error(), "sk-canary") {
		t.Fatalf("secret in error: %v", err)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("the redacted error lost its chain")
	}
	clean := errors.New("nothing secret")
	if r.Error(clean) != clean {
		t.Fatal("an error with nothing to redact was wrapped")
	}
}

func TestBytesKeepsSliceWhenClean(t *testing.T) {
	r := New("sk-canary-123456")
	b := []byte("clean")
	if got := r.Bytes(b); &got[0] != &b[0] {
		t.Fatal("Bytes copied a clean slice")
	}
	if got := string(r.Bytes([]byte("x sk-canary-123456"))); got != "x [redacted]" {
		t.Fatalf("got %q", got)
	}
}

func TestSecretName(t *testing.T) {
	var got []string
	for _, n := range []string{"ANTHROPIC_API_KEY", "openai_api_key", "GITHUB_TOKEN", "AWS_SECRET",
		"DB_PASSWORD", "mypassword_file", "KEY", "TOKEN", "KEYBOARD", "MONKEY", "TOKENS", "HOME", "PATH", "SECRETARY"} {
		if SecretName(n) {
			got = append(got, n)
		}
	}
	want := []string{"ANTHROPIC_API_KEY", "openai_api_key", "GITHUB_TOKEN", "AWS_SECRET", "DB_PASSWORD", "mypassword_file", "KEY", "TOKEN"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("SecretName (-want +got):\n%s", diff)
	}
}

func TestFromEnviron(t *testing.T) {
	got := FromEnviron([]string{"HOME=/root", "X_API_KEY=sk-123456", "EMPTY_TOKEN=", "BAD", "A_SECRET=a=b=c"})
	if diff := cmp.Diff([]string{"sk-123456", "a=b=c"}, got); diff != "" {
		t.Fatalf("FromEnviron (-want +got):\n%s", diff)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := New("first-secret")
	done := make(chan bool)
	go func() {
		for i := range 100 {
			r.Add(fmt.Sprintf("secret-number-%03d", i))
		}
		close(done)
	}()
	for range 100 {
		if strings.Contains(r.String("first-secret"), "first") {
			t.Fatal("known secret leaked")
		}
	}
	<-done
	if got := r.String("secret-number-099"); got != Placeholder {
		t.Fatalf("got %q", got)
	}
}

// FuzzString: whatever the secrets and the text, no secret of usable length
// survives redaction.
func FuzzString(f *testing.F) {
	f.Add("sk-abcdef", "d]tail99", "xx sk-abcdef yy")
	f.Add("zzabcdef", "d]tail99", "zzabcdeftail99")
	f.Add("ab\"cdef", "\x00\xff\xfe\x01", "ab\\\"cdef")
	f.Fuzz(func(t *testing.T, s1, s2, text string) {
		r := New(s1, s2)
		got := r.String(text + s1 + text + s2)
		for _, s := range []string{s1, s2} {
			if len(s) >= MinLength && !strings.Contains(Placeholder, s) && strings.Contains(got, s) {
				t.Fatalf("secret %q survived in %q", s, got)
			}
		}
	})
}

func TestStreamSplitSecret(t *testing.T) {
	r := New("sk-canary-123456")
	for _, pieces := range [][]string{
		{"key: sk-can", "ary-123456 done"},
		{"k", "ey: s", "k-canary-12345", "6", " done"},
		{"key: sk-canary-123456 done"},
	} {
		s := Stream{Redactor: r}
		var got strings.Builder
		for _, p := range pieces {
			out := s.Next(p)
			if strings.Contains(out, "canary") {
				t.Errorf("%q: Next showed part of the secret: %q", pieces, out)
			}
			got.WriteString(out)
		}
		got.WriteString(s.Flush())
		if got.String() != "key: [redacted] done" {
			t.Errorf("%q: streamed %q", pieces, got.String())
		}
	}
	// A tail that only looks like a secret's start is shown once settled.
	s := Stream{Redactor: r}
	if out := s.Next("so sk-"); out != "so " {
		t.Errorf("Next = %q, want the possible secret held back", out)
	}
	if out := s.Next("lite"); out != "sk-lite" {
		t.Errorf("Next = %q, want the held text released", out)
	}
	var nilStream Stream
	if nilStream.Next("abc") != "abc" || nilStream.Flush() != "" {
		t.Error("a zero Stream must pass text through")
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(New("sk-canary-123456"), &b)
	n, err := fmt.Fprintf(w, "error: bad key sk-canary-123456\n")
	if err != nil || n != len("error: bad key sk-canary-123456\n") {
		t.Errorf("Fprintf = %d, %v", n, err)
	}
	if b.String() != "error: bad key [redacted]\n" {
		t.Errorf("wrote %q", b.String())
	}
	if w.Fd() != ^uintptr(0) {
		t.Error("a writer without a file has no Fd")
	}
}

// TestEncodedForms: a secret passed on encoded (base64 standard or
// URL-safe, alone or at any alignment inside a longer blob; hex; percent-
// encoded; reversed) is redacted like the literal.
func TestEncodedForms(t *testing.T) {
	const secret = "sk-live/4f+Zq?9&key"
	r := New(secret)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
		for lead := range 3 {
			for trail := range 3 {
				blob := strings.Repeat("x", lead) + secret + strings.Repeat("y", trail)
				text := "token: " + enc.EncodeToString([]byte(blob)) + " end"
				got := r.String(text)
				if got == text || !strings.Contains(got, Placeholder) {
					t.Errorf("%d+%d bytes around it, encoded %q: not redacted: %q", lead, trail, enc.EncodeToString([]byte(blob)), got)
				}
			}
		}
	}
	for name, text := range map[string]string{
		"hex":             hex.EncodeToString([]byte(secret)),
		"HEX":             strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"query escaped":   url.QueryEscape(secret),
		"path escaped":    url.PathEscape(secret),
		"reversed":        "yek&9?qZ+f4/evil-ks",
		"url query value": "https://h/?k=" + url.QueryEscape(secret) + "&x=1",
	} {
		if got := r.String("a " + text + " b"); strings.Contains(got, text) {
			t.Errorf("%s: %q", name, got)
		}
	}
	// Ordinary text stays as it is.
	if got := r.String("nothing secret here, not even aGVsbG8="); got != "nothing secret here, not even aGVsbG8=" {
		t.Errorf("clean text changed: %q", got)
	}
}
