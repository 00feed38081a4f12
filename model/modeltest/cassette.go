package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/model"
)

// Interaction is one recorded HTTP exchange of a cassette: what the
// client sent and what the real server answered.
type Interaction struct {
	Request     json.RawMessage // the request body, as JSON
	Status      int
	ContentType string
	Body        []byte // the response body, byte for byte (a stream's SSE text)
}

// cassette is the YAML that vcrpy writes (and pydantic-ai's tests record):
// bodies either as text (body.string) or, for JSON, decoded (parsed_body).
type cassette struct {
	Interactions []struct {
		Request struct {
			ParsedBody any `yaml:"parsed_body"`
			Body       any `yaml:"body"`
		} `yaml:"request"`
		Response struct {
			Status struct {
				Code int `yaml:"code"`
			} `yaml:"status"`
			Headers    map[string][]string `yaml:"headers"`
			ParsedBody any                 `yaml:"parsed_body"`
			Body       struct {
				String string `yaml:"string"`
			} `yaml:"body"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// LoadCassette reads a vcrpy cassette of recorded real traffic.
func LoadCassette(t testing.TB, path string) []Interaction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c cassette
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := make([]Interaction, len(c.Interactions))
	for i, in := range c.Interactions {
		it := Interaction{Status: in.Response.Status.Code, ContentType: "application/json"}
		if req := in.Request.ParsedBody; req != nil {
			if it.Request, err = json.Marshal(req); err != nil {
				t.Fatalf("%s: request %d: %v", path, i+1, err)
			}
		}
		for k, v := range in.Response.Headers {
			if strings.EqualFold(k, "content-type") && len(v) > 0 {
				it.ContentType = v[0]
			}
		}
		if body := in.Response.ParsedBody; body != nil {
			if it.Body, err = json.Marshal(body); err != nil {
				t.Fatalf("%s: response %d: %v", path, i+1, err)
			}
		} else {
			it.Body = []byte(in.Response.Body.String)
		}
		out[i] = it
	}
	return out
}

// Replay is a local server that answers the nth request with the nth
// interaction's response, and records the request bodies it received.
type Replay struct {
	*httptest.Server
	mu     sync.Mutex
	played []Interaction
	bodies [][]byte
}

// ServeCassette starts a Replay of interactions; it is closed when t ends.
func ServeCassette(t testing.TB, interactions []Interaction) *Replay {
	r := &Replay{played: interactions}
	r.Server = httptest.NewServer(http.HandlerFunc(r.handle))
	t.Cleanup(r.Close)
	return r
}

func (r *Replay) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := readAll(req)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	if n >= len(r.played) {
		http.Error(w, fmt.Sprintf("modeltest: request %d, but the cassette has %d", n+1, len(r.played)), http.StatusTeapot)
		return
	}
	it := r.played[n]
	w.Header().Set("Content-Type", it.ContentType)
	w.WriteHeader(it.Status)
	w.Write(it.Body)
}

// Bodies returns every request body received, in order.
func (r *Replay) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// Field returns the JSON at path (object keys and array indices, e.g.
// "messages", "1", "content") in body, compacted; "" if absent.
func Field(t testing.TB, body []byte, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	if v == nil {
		return ""
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	json.Compact(&b, out)
	return b.String()
}

// EveryCut checks a recorded SSE stream cut off at every byte, as a
// connection that breaks mid-reply cuts it: each cut either fails, so that
// the call is asked for again, or gives the whole reply's content and stop
// reason; never a shorter answer, a thought without its signature or a
// call without its arguments. decode runs bytes through the SDK's SSE
// decoder (an error event, or a malformed one, is an error); assemble
// turns decoded events into a Response as the provider does, done saying
// whether the bytes held a closing "data: [DONE]". Each event is decoded
// once and only the cut one again, so that every byte can be tried.
func EveryCut[E any](t testing.TB, body []byte, decode func([]byte) ([]E, error), assemble func(events []E, done bool) (model.Response, error)) {
	t.Helper()
	ends := []int{0} // where each event ends, after its blank line (LF or CRLF, as Gemini sends)
	for i := 0; i+1 < len(body); i++ {
		switch {
		case body[i] == '\n' && body[i+1] == '\n':
			ends = append(ends, i+2)
		case body[i] == '\n' && i+2 < len(body) && body[i+1] == '\r' && body[i+2] == '\n':
			ends = append(ends, i+3)
		}
	}
	var flat []E
	upto := []int{0}    // events decoded from body[:ends[k]]: flat[:upto[k]]
	failed := len(ends) // the first event that does not decode
	for k := 1; k < len(ends); k++ {
		evs, err := decode(body[ends[k-1]:ends[k]])
		if err != nil && failed == len(ends) {
			failed = k
		}
		flat = append(flat, evs...)
		upto = append(upto, len(flat))
	}
	wholeEvents, err := decode(body)
	if err != nil {
		t.Fatalf("the whole stream does not decode: %v", err)
	}
	whole, err := assemble(wholeEvents, bytes.Contains(body, []byte("data: [DONE]")))
	if err != nil {
		t.Fatalf("the whole stream does not assemble: %v", err)
	}
	k := 0
	var last model.Response // the assembly of flat[:upto[lastK]], for cuts that add no event
	var lastErr error
	lastK, lastDone := -1, false
	for n := range len(body) {
		for k+1 < len(ends) && ends[k+1] <= n {
			k++
		}
		if k >= failed {
			continue // an event before the cut is an error
		}
		tail, err := decode(body[ends[k]:n])
		if err != nil {
			continue
		}
		done := bytes.Contains(body[:n], []byte("data: [DONE]"))
		var got model.Response
		if len(tail) == 0 && k == lastK && done == lastDone {
			got, err = last, lastErr // the same events as the previous cut
		} else {
			got, err = assemble(append(flat[:upto[k]:upto[k]], tail...), done)
			if len(tail) == 0 {
				last, lastErr, lastK, lastDone = got, err, k, done
			}
		}
		if err != nil {
			continue
		}
		if diff := diffResponse(model.Response{Content: whole.Content, StopReason: whole.StopReason}, model.Response{Content: got.Content, StopReason: got.StopReason}); diff != "" {
			t.Fatalf("cut at byte %d of %d: accepted a different reply (-whole +cut):\n%s", n, len(body), diff)
		}
	}
}
