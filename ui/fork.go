package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// forkView is the "fork from here" form a step of a run offers when the
// server can fork (Config.Fork).
type forkView struct {
	URL, CSRF string
}

func (s *Server) forkForm(id string) *forkView {
	if s.cfg.Fork == nil {
		return nil
	}
	return &forkView{URL: runPath("/fork/", id), CSRF: s.csrf(id)}
}

// forkWait bounds how long the form waits for the fork's row before it
// redirects to the fork's page.
const forkWait = 5 * time.Second

// fork starts a run from a step of run id (the form's at, a step's model
// call) with the form's message, as ratchet fork does, and sends the
// browser to the new run's page.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if !s.csrfOK(id, r.PostForm.Get("csrf")) {
		s.fail(w, r, http.StatusForbidden, errors.New("the form's CSRF token is missing or wrong: reload the page and fork again"))
		return
	}
	if s.cfg.Fork == nil {
		s.fail(w, r, http.StatusForbidden, errors.New("this server is read-only: fork with ratchet fork"))
		return
	}
	at, err := strconv.ParseInt(r.PostForm.Get("at"), 10, 64)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("at %q is not an entry number", r.PostForm.Get("at")))
		return
	}
	message := strings.TrimSpace(r.PostForm.Get("message"))
	if len(message) > runner.MaxMessageBytes {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("the message is %d bytes, over the limit of %d", len(message), runner.MaxMessageBytes))
		return
	}
	child := "run-" + s.cfg.Now().UTC().Format("20060102-150405.000000")
	done := make(chan error, 1)
	s.wg.Go(func() {
		err := s.cfg.Fork(s.ctx, child, runner.ForkOptions{From: id, At: at, Message: message})
		if err != nil {
			s.cfg.Log.Error("ui: forking run", "run", id, "at", at, "err", s.redact(err.Error()))
		}
		done <- err
	})
	// The fork's page exists once its row does; a fork refused before
	// (runner.Fork checks the point and names the nearest) says why here.
	for deadline := time.Now().Add(forkWait); time.Now().Before(deadline); {
		select {
		case err := <-done:
			if err != nil {
				if _, rerr := s.cfg.Store.Run(r.Context(), child); errors.Is(rerr, store.ErrNotFound) {
					s.fail(w, r, http.StatusBadRequest, err)
					return
				}
			}
			deadline = time.Time{}
		case <-time.After(20 * time.Millisecond):
			if _, err := s.cfg.Store.Run(r.Context(), child); err == nil {
				deadline = time.Time{}
			}
		}
	}
	http.Redirect(w, r, runPath("/runs/", child), http.StatusSeeOther)
}
