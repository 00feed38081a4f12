// Package ui is ratchet's local web UI: an http.Handler over the run
// database and eval result sets. It lists runs, shows one run's Result,
// budget, transcript and timeline, streams a live run's new events over
// server-sent events, answers a run that waits for a person, and shows eval
// suites and comparisons.
//
// Pages are rendered on the server with html/template and work without
// JavaScript; a vendored copy of htmx (static/htmx.min.js) and a short
// script (static/live.js) add live updates. Nothing is fetched from
// elsewhere: the Content-Security-Policy allows this origin only.
//
// It is safe by default: the Host header must name a loopback address or
// one of Config.Hosts (against DNS rebinding); a state-changing request must
// come from this origin (Origin header) and carry the form's CSRF token; with
// Config.Token every request must carry the token; every model and tool text
// passes through Config.Redactor and html/template's escaping, so a model's
// text is shown as text, never markup.
package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// Config configures a Server. Store is required; the zero value of every
// other field means its default.
type Config struct {
	// Store is the run database shown.
	Store store.Store
	// EvalDir holds eval result sets, one directory per label with a
	// results.jsonl (eval.Dir); "" shows no evals.
	EvalDir string
	// Resume carries on a waiting run with a person's reply, as ratchet
	// answer/approve/deny do; the server calls it in a goroutine of its
	// own, with a context that ends when the server is closed. Nil makes
	// the UI read-only: a waiting run shows the command that answers it.
	Resume func(ctx context.Context, runID string, opts runner.ResumeOptions) error
	// Fork starts run child from the state after entry opts.At of run
	// opts.From (a step's model call) with opts.Message, as ratchet fork
	// does (runner.Fork); the server calls it in a goroutine of its own,
	// with a context that ends when the server is closed. Nil offers no
	// "fork from here".
	Fork func(ctx context.Context, child string, opts runner.ForkOptions) error
	// Redactor replaces secrets in every text shown; nil shows text as it
	// is stored (which the runner has already redacted).
	Redactor *redact.Redactor
	// Token, when set, must be carried by every request: as ?token=…
	// (which sets a cookie and redirects without it), the cookie, or an
	// Authorization: Bearer header.
	Token string
	// Hosts are host names (without port) accepted in the Host header
	// besides localhost and loopback addresses, e.g. the name of a
	// non-loopback address the server is bound to.
	Hosts []string
	// AnyHost accepts every Host header, for a server bound to all
	// interfaces. It needs Token: a page that rebinds a name to this
	// server cannot carry the token (the cookie belongs to this origin).
	AnyHost bool
	// PageSize is the number of runs per list page (default 50) and of
	// steps per transcript page (default 50).
	PageSize int
	// Poll is how often a live stream looks for new events (default 200ms).
	Poll time.Duration
	// Now is the clock for ages (default time.Now).
	Now func() time.Time
	// Log receives errors the pages could not show (default slog's).
	Log *slog.Logger
}

// Server is the UI. It is safe for concurrent use.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	tmpl   *template.Template
	secret []byte // keys the CSRF tokens; new each process

	ctx    context.Context // ends with Close: resumed runs stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// resuming marks runs carried on by this server and not yet back;
	// resumeErr keeps why carrying one on failed, to show on its page.
	resuming  map[string]bool
	resumeErr map[string]error
}

//go:embed static
var staticFiles embed.FS

// New returns a Server for cfg, or every problem with cfg.
func New(cfg Config) (*Server, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("ui: Config.Store is required"))
	}
	if cfg.PageSize < 0 {
		errs = append(errs, fmt.Errorf("ui: Config.PageSize is %d, want > 0 (or 0 for the default)", cfg.PageSize))
	}
	if cfg.Poll < 0 {
		errs = append(errs, fmt.Errorf("ui: Config.Poll is %v, want > 0 (or 0 for the default)", cfg.Poll))
	}
	for _, h := range cfg.Hosts {
		if h == "" || strings.ContainsAny(h, ":/ ") && net.ParseIP(h) == nil {
			errs = append(errs, fmt.Errorf("ui: Config.Hosts: %q is not a host name", h))
		}
	}
	if cfg.AnyHost && cfg.Token == "" {
		errs = append(errs, errors.New("ui: Config.AnyHost needs Config.Token"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = 50
	}
	if cfg.Poll == 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), secret: make([]byte, 32), resuming: map[string]bool{}, resumeErr: map[string]error{}}
	rand.Read(s.secret)
	s.tmpl = s.templates()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	static, _ := fs.Sub(staticFiles, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheForever(http.FileServerFS(static))))
	s.mux.HandleFunc("GET /{$}", s.listPage)
	s.mux.HandleFunc("GET /runs/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/?"+r.URL.RawQuery, http.StatusSeeOther)
	})
	s.mux.HandleFunc("GET /runs/{id...}", s.runPage)
	s.mux.HandleFunc("GET /events/{id...}", s.events)
	s.mux.HandleFunc("GET /live/{id...}", s.live)
	s.mux.HandleFunc("GET /row/{id...}", s.rowFragment)
	s.mux.HandleFunc("POST /answer/{id...}", s.answer)
	s.mux.HandleFunc("POST /fork/{id...}", s.fork)
	s.mux.HandleFunc("GET /evals/{$}", s.evalsPage)
	s.mux.HandleFunc("GET /evals/{label}/{$}", s.suitePage)
	s.mux.HandleFunc("GET /evals/{label}/run", s.evalRunPage)
	s.mux.HandleFunc("GET /compare", s.comparePage)
	return s, nil
}

// Close stops the runs this server carries on (they end cancelled and can
// be resumed) and waits for them.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP checks the request (host, token, origin) and serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form, which the Origin check must refuse.
	h.Set("Referrer-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "ui: this server answers only to localhost (Host "+r.Host+" refused: DNS rebinding?)", http.StatusMisdirectedRequest)
		return
	}
	if s.cfg.Token != "" {
		if q := r.URL.Query().Get("token"); q != "" {
			if !equal(q, s.cfg.Token) {
				http.Error(w, "ui: wrong token", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			v := u.Query()
			v.Del("token")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if !s.tokenCarried(r) {
			http.Error(w, "ui: this server needs its token: open the URL 'ratchet ui' printed (…?token=…)", http.StatusUnauthorized)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o == "" || !sameOrigin(o, r.Host) {
			http.Error(w, "ui: a change must come from this server's own page (Origin "+o+" refused)", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

const tokenCookie = "ratchet_token"

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (s *Server) tokenCarried(r *http.Request) bool {
	if c, err := r.Cookie(tokenCookie); err == nil && equal(c.Value, s.cfg.Token) {
		return true
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && equal(bearer, s.cfg.Token)
}

// hostAllowed accepts localhost, loopback addresses and Config.Hosts, with
// any port.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if s.cfg.AnyHost {
		return true
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

func sameOrigin(origin, host string) bool {
	return origin == "http://"+host || origin == "https://"+host
}

// csrf is the token a form about run must carry: an HMAC of the run ID
// under this process's secret, which a page of another origin cannot read.
func (s *Server) csrf(run string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("csrf\x00" + run))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) csrfOK(run, token string) bool { return equal(token, s.csrf(run)) }

// IsLoopback reports whether a listen address (host:port) binds only to
// loopback: "127.0.0.1:7777", "[::1]:0", "localhost:7777".
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact returns s with secrets replaced.
func (s *Server) redact(t string) string { return s.cfg.Redactor.String(t) }

func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code >= 500 {
		s.cfg.Log.Error("ui", "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	s.render(w, "error", pageData{Title: http.StatusText(code), Data: s.redact(err.Error())})
}
