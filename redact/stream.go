package redact

import (
	"io"
	"strings"
)

// Stream redacts text that arrives in pieces (a streamed model reply), where
// a secret may be split across two pieces. Next returns what is safe to
// show now: the text so far, redacted, less any tail that could be the
// start of a secret, which is held back until the next piece settles it.
// Flush returns what is held back. A Stream with a nil Redactor passes
// text through. A Stream is not safe for concurrent use.
type Stream struct {
	Redactor *Redactor
	pending  string
}

// Next takes the next piece and returns the text to show now.
func (s *Stream) Next(piece string) string {
	if s.Redactor.Len() == 0 && s.pending == "" {
		return piece
	}
	t := s.Redactor.String(s.pending + piece)
	hold := s.Redactor.prefixTail(t)
	s.pending = t[len(t)-hold:]
	return t[:len(t)-hold]
}

// Flush returns the text held back, redacted, and forgets it.
func (s *Stream) Flush() string {
	out := s.Redactor.String(s.pending)
	s.pending = ""
	return out
}

// prefixTail is the length of the longest suffix of t that is a proper
// prefix of a known secret.
func (r *Redactor) prefixTail(t string) int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	best := 0
	for s := range r.secrets {
		for k := min(len(s)-1, len(t)); k > best; k-- {
			if strings.HasSuffix(t, s[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

// Writer redacts what is written to w, one Write at a time: a secret split
// between two Writes is not caught, so write whole lines (as fmt.Fprintf
// does). It keeps w's Fd, so that a terminal stays recognisable.
type Writer struct {
	r *Redactor
	w io.Writer
}

// NewWriter returns a Writer redacting with r onto w.
func NewWriter(r *Redactor, w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Write writes p, redacted, to the underlying writer and reports len(p)
// written when that write succeeds.
func (w *Writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd returns the underlying writer's file descriptor, or ^uintptr(0) when
// it has none (which no terminal check accepts).
func (w *Writer) Fd() uintptr {
	if f, ok := w.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
