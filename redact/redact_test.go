package redact

import (
	"errors"
	"fmt"
	"io/fs"
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
