package ui

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// live streams a run's changes as server-sent events, polling the store
// every Config.Poll:
//
//	event: step    data: the HTML of a step that is new or grew (its element
//	               id is step-N: the page replaces it or appends it)
//	event: status  data: the run's new status (the page reloads)
//
// Each event's id is the Seq of the last entry it includes, so a browser
// that reconnects sends it back as Last-Event-ID and gets only what came
// after. The URL's step and seq name the last step the page shows (its
// number and first Seq): steps are rebuilt from there, so a step that grew
// is sent whole. step=0&seq=0 streams the status only (a page that does not
// show the run's latest steps).
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	stepN, _ := strconv.Atoi(q.Get("step"))
	stepSeq, _ := strconv.ParseInt(q.Get("seq"), 10, 64)
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	status := q.Get("status")
	if last, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && last > after {
		after = last
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "ui: streaming unsupported", http.StatusInternalServerError)
		return
	}
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	send := func(event string, id int64, data string) {
		fmt.Fprintf(bw, "event: %s\n", event)
		if id > 0 {
			fmt.Fprintf(bw, "id: %d\n", id)
		}
		for line := range strings.SplitSeq(data, "\n") {
			fmt.Fprintf(bw, "data: %s\n", line)
		}
		bw.WriteString("\n")
	}
	fmt.Fprintf(bw, "retry: 500\n\n")
	bw.Flush()
	flusher.Flush()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	for {
		last, err := s.cfg.Store.LastSeq(r.Context(), id)
		if err != nil {
			return
		}
		if last > after && stepSeq > 0 {
			entries, err := s.cfg.Store.Entries(r.Context(), id, stepSeq-1)
			if err != nil {
				return
			}
			t, err := buildTranscript(id, entries, stepN, s.redact)
			if err != nil {
				s.cfg.Log.Error("ui: live", "run", id, "err", err)
				return
			}
			var html strings.Builder
			for _, st := range t.Steps {
				html.Reset()
				if err := s.tmpl.ExecuteTemplate(&html, "step", stepData{Step: st, RunID: id, EventsURL: runPath("/events/", id), Fork: s.forkForm(id)}); err != nil {
					s.cfg.Log.Error("ui: live", "run", id, "err", err)
					return
				}
				send("step", entries[len(entries)-1].Seq, html.String())
			}
			if n := len(t.Steps); n > 0 {
				stepN, stepSeq = t.Steps[n-1].N, t.Steps[n-1].FirstSeq
			}
			if n := len(entries); n > 0 {
				after = entries[n-1].Seq
			}
		} else if last > after {
			after = last
		}
		row, err := s.cfg.Store.Run(r.Context(), id)
		if err != nil {
			return
		}
		if row.Status != status {
			status = row.Status
			send("status", after, status)
		}
		bw.Flush()
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stepData is what the step template renders.
type stepData struct {
	Step      *step
	RunID     string
	EventsURL string
	// Fork is the step's "fork from here" form, nil when there is none.
	Fork *forkView
}

// RawURL is the URL of the step's raw events, "" when there is none.
func (d stepData) RawURL() string {
	if d.EventsURL == "" {
		return ""
	}
	return fmt.Sprintf("%s?from=%d&to=%d", d.EventsURL, d.Step.FirstSeq, d.Step.LastSeq)
}
