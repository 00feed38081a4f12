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
