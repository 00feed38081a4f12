package check

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/verify"
)

// MinQuoteWords is how many words a quoted span needs to count as a claim.
const MinQuoteWords = 3

// GroundingOption configures Grounding.
type GroundingOption func(*groundingConfig)

type groundingConfig struct{ allowNoQuotes bool }

// AllowNoQuotes lets an answer that quotes nothing pass the grounding check.
// Without it such an answer fails, because an answer that cites nothing is
// not grounded in anything.
func AllowNoQuotes() GroundingOption {
	return func(c *groundingConfig) { c.allowNoQuotes = true }
}

// Grounding returns a check, named "grounding", that passes when every
// quoted claim in the answer appears in one of the sources (name → text; the
// caller reads the files).
//
// A quoted claim is a span between straight double quotes "…" or curly double
// quotes “…” holding at least MinQuoteWords words (a word has a letter or a
// digit), so "OK" or a JSON key is not a claim. Quotes do not nest and do not
// span a blank line: an opening quote whose span would cross one is taken as
// a stray mark. A straight quote followed by white space never opens a quote
// (it closes one, or is an inch mark), which keeps a stray mark from
// swapping the openers and closers after it. Matching ignores case, collapses white space, reads curly
// quotes and apostrophes as straight ones and every dash as "-", ignores
// punctuation at the ends of the quote (a full stop inside the quotes), and
// respects word boundaries ("cat sat" is not found in "bobcat sat"). An
// ellipsis ("..." or "…", or "[...]") marks an omission: the pieces around
// it must appear in order in the same source.
//
// A failure lists the quotes not found (up to five) and Where is the first
// of them. An answer with no quoted claim fails, telling the model to cite
// the sources with quotes, unless AllowNoQuotes is given.
//
// The provenance is Grounding.
func Grounding(sources map[string]string, opts ...GroundingOption) (verify.Verifier, error) {
	var cfg groundingConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(sources) == 0 {
		return nil, errors.New("grounding check: no sources given; the quotes need texts to be found in")
	}
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	slices.Sort(names)
	norm := make([]string, len(names))
	for i, name := range names {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("grounding check: a source has an empty name")
		}
		if norm[i] = normalizeText(sources[name]); norm[i] == "" {
			return nil, fmt.Errorf("grounding check: source %q is empty", name)
		}
	}
	sourceList := clip(strings.Join(names[:min(len(names), 5)], ", "), 200)
	if len(names) > 5 {
		sourceList += fmt.Sprintf(" and %d more", len(names)-5)
	}
	return &verifier{name: "grounding", prov: verify.Grounding, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		quotes := extractQuotes(c.Answer)
		if len(quotes) == 0 {
			if cfg.allowNoQuotes {
				return verify.Verdict{OK: true, Confidence: 1, Detail: "the answer quotes nothing, which is allowed"}, nil
			}
			return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("the answer quotes nothing: cite the sources with quotes, copying at least %d words word for word in double quotes", MinQuoteWords)}, nil
		}
		var missing []string
		for _, q := range quotes {
			if !slices.ContainsFunc(norm, q.in) {
				missing = append(missing, fmt.Sprintf("%q", clip(oneLine(q.raw), 100)))
			}
		}
		if len(missing) == 0 {
			return verify.Verdict{OK: true, Confidence: 1, Detail: fmt.Sprintf("all %s found in the sources", words.Count(len(quotes), "quote"))}, nil
		}
		list := missing[:min(len(missing), 5)]
		if len(missing) > 5 {
			list = append(list, fmt.Sprintf("and %d more", len(missing)-5))
		}
		detail := fmt.Sprintf("%d of %s not found in any source (%s): %s", len(missing), words.Count(len(quotes), "quote"), sourceList, strings.Join(list, ", "))
		return verify.Verdict{Confidence: 1, Detail: detail, Where: missing[0]}, nil
	}}, nil
}

// quote is one quoted claim: the text between the marks as written, and its
// normalised pieces (more than one when an ellipsis marks an omission).
type quote struct {
	raw    string
	pieces []string
}

// in reports whether the quote appears in the normalised source: every piece,
// in order, each at word boundaries.
func (q quote) in(source string) bool {
	pos := 0
	for _, p := range q.pieces {
		end := findWord(source, p, pos)
		if end < 0 {
			return false
		}
		pos = end
	}
	return true
}

// findWord returns the end of the first occurrence of sub in s at or after
// from that does not start or end inside a word, or -1.
func findWord(s, sub string, from int) int {
	first, _ := utf8.DecodeRuneInString(sub)
	last, _ := utf8.DecodeLastRuneInString(sub)
	for from <= len(s) {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return -1
		}
		start, end := from+i, from+i+len(sub)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWordRune(first) || !isWordRune(before)) &&
			(end == len(s) || !isWordRune(last) || !isWordRune(after)) {
			return end
		}
		_, size := utf8.DecodeRuneInString(s[start:])
		from = start + max(size, 1)
	}
	return -1
}

var paragraphBreak = regexp.MustCompile(`\n[ \t\r\f\v]*\n`)

// extractQuotes returns the quoted claims of the answer in order.
func extractQuotes(s string) []quote {
	var out []quote
	for i := 0; i < len(s); {
		open := strings.IndexAny(s[i:], "\"“")
		if open < 0 {
			break
		}
		open += i
		opener, size := utf8.DecodeRuneInString(s[open:])
		closer := "\""
		if opener == '“' {
			closer = "”"
		}
		start := open + size
		if next, _ := utf8.DecodeRuneInString(s[start:]); opener == '"' && (start == len(s) || unicode.IsSpace(next)) {
			i = start // a straight quote followed by space closes, it does not open
			continue
		}
		end := strings.Index(s[start:], closer)
		if end < 0 || paragraphBreak.MatchString(s[start:start+end]) {
			i = start // a stray mark
			continue
		}
		span := s[start : start+end]
		i = start + end + len(closer)
		if q, ok := claim(span); ok {
			out = append(out, q)
		}
	}
	return out
}

// claim normalises a quoted span, reporting whether it has enough words to
// be a claim.
func claim(span string) (quote, bool) {
	n := trimPunct(normalizeText(span))
	words := 0
	for _, w := range strings.Fields(n) {
		if strings.IndexFunc(w, isWordRune) >= 0 {
			words++
		}
	}
	if words < MinQuoteWords {
		return quote{}, false
	}
	q := quote{raw: span}
	for _, p := range strings.Split(n, "...") {
		if p = trimPunct(p); p != "" {
			q.pieces = append(q.pieces, p)
		}
	}
	return q, len(q.pieces) > 0
}

func trimPunct(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// normalizeText lower-cases s, reads curly quotes as straight ones, dashes as
// "-" and "…" as "...", drops soft hyphens and zero-width characters, and
// collapses white space to single spaces.
func normalizeText(s string) string {
	s = strings.ReplaceAll(s, "…", "...")
	s = strings.Map(func(r rune) rune {
		switch r {
		case '‘', '’', '‚', '‛', '′':
			return '\''
		case '“', '”', '„', '‟', '″':
			return '"'
		case '‐', '‑', '‒', '–', '—', '―', '−':
			return '-'
		case '\u00ad', '\u200b', '\u200c', '\u200d', '\ufeff':
			return -1
		}
		return unicode.ToLower(r)
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
