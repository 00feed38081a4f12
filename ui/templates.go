package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed templates/*.html
var templateFiles embed.FS

// foldAt is the size past which a text is shown folded: its head, and the
// whole on demand.
const (
	foldBytes = 1200
	foldLines = 16
)

var funcs = template.FuncMap{
	"runURL":    func(id string) string { return runPath("/runs/", id) },
	"rowURL":    func(id string) string { return runPath("/row/", id) },
	"answerURL": func(id string) string { return runPath("/answer/", id) },
	"dur":       fmtDur,
	"pct":       func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"conf":      func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"long":      long,
	"head":      head,
	"lines":     func(s string) int { return strings.Count(s, "\n") + 1 },
	"bytes":     func(s string) int { return len(s) },
	"join":      strings.Join,
	"time":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"step": func(st *step, run, events string, fork *forkView) stepData {
		return stepData{Step: st, RunID: run, EventsURL: events, Fork: fork}
	},
	"deref": func(b *bool) bool { return b != nil && *b },
	"diff":  diffLines,
}

// diffLine is one line of a unified diff and the class that colours it.
type diffLine struct{ Class, Text string }

// diffLines splits a unified diff into its lines, each classed by what it
// is: a file header, a hunk header, an added or a removed line.
func diffLines(d string) []diffLine {
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		class := ""
		switch {
		case strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out[i] = diffLine{class, l}
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// long reports whether a text is shown folded.
func long(s string) bool { return len(s) > foldBytes || strings.Count(s, "\n") >= foldLines }

// head is the part of a long text shown folded: its first lines, cut at a
// rune boundary.
func head(s string) string {
	lines := strings.SplitN(s, "\n", foldLines)
	h := strings.Join(lines[:min(len(lines), foldLines-4)], "\n")
	if len(h) > foldBytes/2 {
		h = h[:foldBytes/2]
		for !utf8.ValidString(h) {
			h = h[:len(h)-1]
		}
	}
	return h
}

func pathEscape(s string) string { return url.PathEscape(s) }

func (s *Server) templates() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))
}

// pageData is what the layout renders: the page's title, which nav entry
// is current, and the page's own data.
type pageData struct {
	Title string
	Nav   string
	Data  any
}

// page renders a whole page: the layout around the named template. It is
// rendered to a buffer first, so a template error is a clean 500.
func (s *Server) page(w http.ResponseWriter, name string, d pageData) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, d); err != nil {
		s.cfg.Log.Error("ui: render", "page", name, "err", err)
		http.Error(w, "ui: could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// render renders one named template (a fragment or the error page).
func (s *Server) render(w http.ResponseWriter, name string, d any) {
	if err := s.tmpl.ExecuteTemplate(w, name, d); err != nil {
		s.cfg.Log.Error("ui: render", "template", name, "err", err)
	}
}
