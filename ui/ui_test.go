package ui_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/ui"
)

func newServer(t testing.TB, cfg ui.Config) (*ui.Server, *httptest.Server) {
	t.Helper()
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs
}

func get(t testing.TB, hs *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := hs.Client().Get(hs.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConfigProblems: every problem at once.
func TestConfigProblems(t *testing.T) {
	_, err := ui.New(ui.Config{PageSize: -1, Poll: -time.Second, AnyHost: true, Hosts: []string{"a b"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Store is required", "PageSize", "Poll", "AnyHost needs Config.Token", `"a b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestModelTextIsEscaped: a reply full of markup is shown as text on the
// run page and in its live stream, never as markup.
func TestModelTextIsEscaped(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store})
	code, page := get(t, hs, "/runs/run-done")
	if code != 200 {
		t.Fatalf("GET run page: %d\n%s", code, page)
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") || strings.Contains(page, "<b>bold?</b>") {
		t.Errorf("the model's markup reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;") {
		t.Errorf("the model's text is not on the page as text")
	}
	// The only scripts are this origin's two.
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1)
	if len(scripts) != 2 {
		t.Errorf("scripts on the page = %q, want the two vendored ones", scripts)
	}
}

// TestSecretsAreRedacted: a secret a tool printed is on no page and in no
// download.
func TestSecretsAreRedacted(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Redactor: redact.New(secret)})
	for _, path := range []string{"/runs/run-done", "/events/run-done", "/events/run-done?from=1&to=100", "/"} {
		code, body := get(t, hs, path)
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s shows the secret", path)
		}
	}
	if _, page := get(t, hs, "/runs/run-done"); !strings.Contains(page, "API_KEY="+redact.Placeholder) {
		t.Errorf("the tool's output is not on the page with the secret replaced")
	}
}

// TestHostCheck: only loopback names (and Config.Hosts) are served, so a
// page of another site that rebinds its name to 127.0.0.1 gets nothing.
func TestHostCheck(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Hosts: []string{"ratchet.lan"}})
	for host, want := range map[string]int{
		"evil.example": http.StatusMisdirectedRequest, "evil.example:80": http.StatusMisdirectedRequest,
		"127.0.0.1:7777": 200, "localhost": 200, "[::1]:7777": 200, "ratchet.lan:7777": 200, "127.0.0.2": 200,
	} {
		req, _ := http.NewRequest("GET", hs.URL+"/", nil)
		req.Host = host
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestToken: with a token every request carries it; ?token= sets a cookie.
func TestToken(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Token: "s3cret"})
	client := hs.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	check := func(name string, req *http.Request, want int) *http.Response {
		t.Helper()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", name, resp.StatusCode, want)
		}
		return resp
	}
	req, _ := http.NewRequest("GET", hs.URL+"/runs/run-done", nil)
	check("no token", req, http.StatusUnauthorized)
	req, _ = http.NewRequest("GET", hs.URL+"/static/style.css", nil)
	check("no token, static", req, http.StatusUnauthorized)
	req, _ = http.NewRequest("GET", hs.URL+"/?token=wrong", nil)
	check("wrong token", req, http.StatusUnauthorized)
	req, _ = http.NewRequest("GET", hs.URL+"/?token=s3cret&status=done", nil)
	resp := check("token in the URL", req, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/?status=done" {
		t.Errorf("redirect to %q, want the URL without its token", loc)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie = %+v, want an HttpOnly, SameSite=Strict one", cookie)
	}
	req, _ = http.NewRequest("GET", hs.URL+"/runs/run-done", nil)
	req.AddCookie(cookie)
	check("cookie", req, 200)
	req, _ = http.NewRequest("GET", hs.URL+"/runs/run-done", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	check("bearer", req, 200)
}

func csrfOf(t testing.TB, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return m[1]
}

func post(t testing.TB, hs *httptest.Server, path, origin string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	client := *hs.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitStatus(t testing.TB, st store.Store, id, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		row, err := st.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if row.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %s", id, row.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAnswerForm: a change needs this origin and the form's CSRF token;
// then the answer carries the run on to done.
func TestAnswerForm(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Resume: sd.resume(t)})
	_, page := get(t, hs, "/runs/run-ask")
	if !strings.Contains(page, "Waiting for a person") || !strings.Contains(page, `value="answer"`) {
		t.Fatalf("the waiting run's page has no answer form:\n%s", page)
	}
	token := csrfOf(t, page)
	good := url.Values{"csrf": {token}, "action": {"answer"}, "text": {"try 5"}}
	for _, tt := range []struct {
		name, origin string
		form         url.Values
		want         int
	}{
		{"no Origin", "", good, http.StatusForbidden},
		{"another origin", "http://evil.example", good, http.StatusForbidden},
		{"no token", hs.URL, url.Values{"action": {"answer"}, "text": {"try 5"}}, http.StatusForbidden},
		{"another run's token", hs.URL, url.Values{"csrf": {csrfOf(t, mustGet(t, hs, "/runs/run-approve"))}, "action": {"answer"}, "text": {"x"}}, http.StatusForbidden},
		{"empty answer", hs.URL, url.Values{"csrf": {token}, "action": {"answer"}, "text": {"  "}}, http.StatusBadRequest},
		{"bad action", hs.URL, url.Values{"csrf": {token}, "action": {"shrug"}}, http.StatusBadRequest},
	} {
		if code, body := post(t, hs, "/answer/run-ask", tt.origin, tt.form); code != tt.want {
			t.Errorf("%s: %d, want %d\n%s", tt.name, code, tt.want, body)
		}
	}
	if row, _ := sd.store.Run(context.Background(), "run-ask"); row.Status != store.StatusAwaitingInput {
		t.Fatalf("a refused request changed the run: %s", row.Status)
	}
	if code, body := post(t, hs, "/answer/run-ask", hs.URL, good); code != http.StatusSeeOther {
		t.Fatalf("answer: %d\n%s", code, body)
	}
	waitStatus(t, sd.store, "run-ask", "done")
	if code, _ := post(t, hs, "/answer/run-ask", hs.URL, good); code != http.StatusConflict {
		t.Errorf("answering a finished run: %d, want 409", code)
	}
	_, page = get(t, hs, "/runs/run-ask")
	if !strings.Contains(page, "a person answered") || !strings.Contains(page, "try 5") {
		t.Errorf("the transcript does not show the answer")
	}
}

func mustGet(t testing.TB, hs *httptest.Server, path string) string {
	t.Helper()
	code, body := get(t, hs, path)
	if code != 200 {
		t.Fatalf("GET %s: %d", path, code)
	}
	return body
}

// TestApproveForm: an approval request shows the call and approve/deny.
func TestApproveForm(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Resume: sd.resume(t)})
	page := mustGet(t, hs, "/runs/run-approve")
	if !strings.Contains(page, "Waiting for approval") || !strings.Contains(page, `value="approve"`) || !strings.Contains(page, `&#34;a&#34;: 2`) {
		t.Fatalf("no approval form with the call's arguments:\n%s", page)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "action": {"approve"}}
	if code, body := post(t, hs, "/answer/run-approve", hs.URL, form); code != http.StatusSeeOther {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	waitStatus(t, sd.store, "run-approve", "done")
}

// TestReadOnly: without Config.Resume a waiting run shows the command.
func TestReadOnly(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store})
	page := mustGet(t, hs, "/runs/run-ask")
	if strings.Contains(page, "<form method=\"post\"") || !strings.Contains(page, "ratchet answer run-ask") {
		t.Errorf("a read-only server offers a form, or no command")
	}
}

func ids(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr id="row-([^"]+)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestListFilters: status family, label, model, text, sort and pages,
// all in the URL.
func TestListFilters(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, PageSize: 2})
	for _, tt := range []struct {
		query string
		want  string
	}{
		{"", "run-exhausted run-parent/c1"},
		{"?page=2", "run-parent run-approve"},
		{"?page=3", "run-ask run-done"},
		{"?page=4", ""},
		{"?status=waiting", "run-approve run-ask"},
		{"?status=done&status=exhausted", "run-exhausted run-parent/c1"},
		{"?label=human", "run-approve run-ask"},
		{"?label=human&status=waiting&page=1", "run-approve run-ask"},
		{"?q=RUN-D", "run-done"},
		{"?model=scripted:test&status=done", "run-parent run-done"},
		{"?model=other", ""},
		{"?model=scripted:test&page=2", "run-approve run-ask"},
		{"?sort=oldest", "run-done run-ask"},
		{"?sort=steps&status=done&status=exhausted&page=2", "run-exhausted run-parent/c1"},
	} {
		code, page := get(t, hs, "/"+tt.query)
		if code != 200 {
			t.Errorf("%s: %d", tt.query, code)
			continue
		}
		if got := strings.Join(ids(page), " "); got != tt.want {
			t.Errorf("%s: runs %q, want %q", tt.query, got, tt.want)
		}
	}
	_, page := get(t, hs, "/")
	if !strings.Contains(page, `href="/?page=2"`) {
		t.Errorf("page 1 does not link to page 2")
	}
	for _, bad := range []string{"?status=happy", "?sort=up", "?page=0", "?page=x"} {
		if code, body := get(t, hs, "/"+bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400\n%s", bad, code, body)
		}
	}
	if code, body := get(t, hs, "/?status=happy&sort=up"); !strings.Contains(body, "happy") || !strings.Contains(body, "up") {
		t.Errorf("bad query (%d): not every problem named:\n%s", code, body)
	}
}

// TestRunPageParts: the Result, verdicts per tier, gauges, timeline,
// transcript and raw events of a done run.
func TestRunPageParts(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store})
	page := mustGet(t, hs, "/runs/run-done")
	for _, want := range []string{
		"Accepted candidate", "attempt 2 passed every check", "<h4>cheap</h4>", "<h4>expensive</h4>",
		"<th>steps</th>", `class="waterfall"`, `id="step-1"`, `id="step-3"`, "attempt 1", "rejected",
		`href="/events/run-done?from=`, `href="/events/run-done" download`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	code, raw := get(t, hs, "/events/run-done")
	if code != 200 || strings.Count(raw, "\n") < 10 || !strings.HasPrefix(raw, `{"seq":1,`) {
		t.Errorf("JSONL download (%d):\n%.300s", code, raw)
	}
	if code, _ := get(t, hs, "/runs/nope"); code != http.StatusNotFound {
		t.Errorf("missing run: %d", code)
	}
}

// TestSubagentPages: a parent's page lists and links its sub-agent's run,
// whose page links back.
func TestSubagentPages(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store})
	page := mustGet(t, hs, "/runs/run-parent")
	for _, want := range []string{"<h2>Sub-agents</h2>", `href="/runs/run-parent/c1"`, "Add 2 and 3.", `<span class="tag">sub-agent</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("parent page lacks %q", want)
		}
	}
	child := mustGet(t, hs, "/runs/run-parent/c1")
	if !strings.Contains(child, `href="/runs/run-parent"`) || !strings.Contains(child, "Add 2 and 3.") {
		t.Errorf("the child's page does not link to its parent")
	}
	if _, list := get(t, hs, "/"); !strings.Contains(list, "sub-agent of") {
		t.Errorf("the list does not mark the sub-agent")
	}
}

// TestLiveStream: a step appended to a live run's log arrives on its
// stream within a second, and a reconnect with Last-Event-ID gets only
// what followed it.
func TestLiveStream(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, Poll: 50 * time.Millisecond})
	page := mustGet(t, hs, "/runs/run-ask")
	m := regexp.MustCompile(`data-live="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("a waiting run's page opens no live stream")
	}
	liveURL := strings.ReplaceAll(m[1], "&amp;", "&")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+liveURL, nil)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan [2]string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev, id string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case line == "" && ev != "":
				events <- [2]string{ev, id}
				ev, id = "", ""
			}
		}
		close(events)
	}()
	// Answering appends the run's next steps.
	last, _ := sd.store.LastSeq(context.Background(), "run-ask")
	start := time.Now()
	answer := "try 5"
	go sd.resume(t)(context.Background(), "run-ask", runnerAnswer(answer))
	timeout := time.After(5 * time.Second)
	var sawStep, sawStatus bool
	for !sawStep || !sawStatus {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			switch ev[0] {
			case "step":
				if !sawStep && time.Since(start) > time.Second {
					t.Errorf("first new step after %v, want ≤ 1s", time.Since(start))
				}
				sawStep = true
				if ev[1] <= "0" {
					t.Errorf("step event without an id")
				}
			case "status":
				sawStatus = true
			}
		case <-timeout:
			t.Fatalf("step %v, status %v after 5s", sawStep, sawStatus)
		}
	}
	cancel()
	waitStatus(t, sd.store, "run-ask", "done")
	// Reconnect from the end: nothing old comes again.
	end, _ := sd.store.LastSeq(context.Background(), "run-ask")
	if end <= last {
		t.Fatalf("the log did not grow: %d → %d", last, end)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	req, _ = http.NewRequestWithContext(ctx2, "GET", hs.URL+liveURL, nil)
	req.Header.Set("Last-Event-ID", itoa(end))
	resp2, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if strings.Contains(string(body), "event: step") {
		t.Errorf("a reconnect from the last event got steps again:\n%.500s", body)
	}
	if !strings.Contains(string(body), "event: status") {
		t.Errorf("a reconnect after the run finished does not hear its status")
	}
}

// TestTranscriptPages: a long run's transcript comes a page of steps at a
// time, each page decoding only its own steps.
func TestTranscriptPages(t *testing.T) {
	sd := seed(t)
	_, hs := newServer(t, ui.Config{Store: sd.store, PageSize: 1})
	stepIDs := func(page string) string {
		var out []string
		for _, m := range regexp.MustCompile(`<article class="step[^"]*" id="(step-\d+)"`).FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, " ")
	}
	for query, want := range map[string]string{"": "step-1", "?page=2": "step-2", "?page=last": "step-3", "?page=3": "step-3"} {
		page := mustGet(t, hs, "/runs/run-done"+query)
		if got := stepIDs(page); got != want {
			t.Errorf("%q: steps %q, want %q", query, got, want)
		}
		if !strings.Contains(page, `<a href="?page=`) {
			t.Errorf("%q: no links to the other pages", query)
		}
	}
	if code, body := get(t, hs, "/runs/run-done?page=4"); code != http.StatusBadRequest || !strings.Contains(body, "pages 1 to 3") {
		t.Errorf("page 4 of 3: %d\n%s", code, body)
	}
}

// TestInterrupted: a run that says running but has no live holder is shown
// interrupted, not live, with the command that carries it on.
func TestInterrupted(t *testing.T) {
	sd := seed(t)
	now := time.Now().UTC()
	if err := sd.store.CreateRun(context.Background(), store.Run{ID: "run-crashed", Goal: "g", Status: store.StatusRunning, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	_, hs := newServer(t, ui.Config{Store: sd.store})
	list := mustGet(t, hs, "/?q=crashed")
	if !strings.Contains(list, `<span class="status interrupted">interrupted</span>`) || strings.Contains(list, "hx-trigger") {
		t.Errorf("the crashed run's row is not interrupted, or still polls:\n%s", list)
	}
	page := mustGet(t, hs, "/runs/run-crashed")
	if !strings.Contains(page, "ratchet resume run-crashed") || strings.Contains(page, "data-live") {
		t.Errorf("the crashed run's page does not say how to carry it on, or follows it")
	}
}

// TestPatchSection: an agent run's patch is on its page, each line classed
// for its colour and escaped, with how to apply it; a redacted one says it
// cannot be applied.
func TestPatchSection(t *testing.T) {
	st := memory.New()
	for id, p := range map[string]*loop.Patch{
		"run-patch":    {Diff: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old\n+new <script>\n", Files: []string{"x.go"}, Original: "/ws"},
		"run-redacted": {Diff: "+key [redacted]\n", Files: []string{"k"}, Original: "/ws", Copy: "/tmp/copy", Redacted: true},
	} {
		cfg := runner.Config{Model: scriptedModel(t, doneTurns()...), Store: st, RunID: id, Patch: func(context.Context) *loop.Patch { return p }}
		if _, err := runner.Run(context.Background(), addTask(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := newServer(t, ui.Config{Store: st})
	page := mustGet(t, hs, "/runs/run-patch")
	for _, want := range []string{"<h2>Patch</h2>", `<span class="hunk">@@ -1 &#43;1 @@</span>`, "1 file changed in the copy of <code>/ws</code>", `<span class="del">-old</span>`,
		`<span class="add">&#43;new &lt;script&gt;</span>`, "ratchet apply run-patch"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
	if page := mustGet(t, hs, "/runs/run-redacted"); !strings.Contains(page, "it cannot be applied; the files are in the copy <code>/tmp/copy</code>") || strings.Contains(page, "ratchet apply run-redacted") {
		t.Error("a redacted patch is offered to apply")
	}
}
