package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ratchetloop/ratchet/model/modeltest"
)

// wire speaks the Gemini API as its reference documents it
// (https://ai.google.dev/api/generate-content): a whole reply is a
// GenerateContentResponse whose first candidate's content has parts (a
// thought summary {"text","thought":true}, text, {"functionCall":{"id",
// "name","args"}}), each part possibly carrying a thoughtSignature (base64),
// a finishReason and usageMetadata; a stream
// (:streamGenerateContent?alt=sse) is such responses as SSE data lines,
// each separated by a CRLF blank line as the real server sends them, text
// split across chunks, the finish reason and usage on the last. Errors are
// {"error":{"code","message","status"}}.
type wire struct{}

var (
	_ modeltest.PathWire       = wire{}
	_ modeltest.ErrorEventWire = wire{}
)

func part(fields string, sig string) string {
	if sig != "" {
		fields += `,"thoughtSignature":` + jsonString(sig)
	}
	return "{" + fields + "}"
}

func usageJSON(r modeltest.Reply) string {
	u := r.Usage
	prompt := u.InputTokens + u.CacheReadTokens
	return fmt.Sprintf(`{"promptTokenCount":%d,"candidatesTokenCount":%d,"cachedContentTokenCount":%d,"totalTokenCount":%d}`,
		prompt, u.OutputTokens, u.CacheReadTokens, prompt+u.OutputTokens)
}

func chunk(parts []string, finish, usage string) string {
	c := `{"candidates":[{"content":{"parts":[` + strings.Join(parts, ",") + `],"role":"model"}`
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	c += `,"index":0}]`
	if usage != "" {
		c += `,"usageMetadata":` + usage
	}
	return c + `,"modelVersion":"gemini-test","responseId":"resp-1"}`
}

// refusal is a reply stopped by Gemini's safety filter, with its message.
func refusal(r modeltest.Reply) string {
	return `{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"SAFETY","finishMessage":` + jsonString(r.Refusal) + `,"index":0}],"usageMetadata":` + usageJSON(r) + `,"modelVersion":"gemini-test"}`
}

func (wire) Reply(r modeltest.Reply, stream bool) (string, []byte) {
	if r.Refusal != "" {
		if stream {
			return "text/event-stream", []byte("data: " + refusal(r) + "\r\n\r\n")
		}
		return "application/json", []byte(refusal(r))
	}
	var thought, text []string
	if r.Thinking != "" {
		thought = []string{part(`"text":`+jsonString(r.Thinking)+`,"thought":true`, r.Signature)}
	}
	if r.Text != "" {
		text = []string{part(`"text":`+jsonString(r.Text), "")}
	}
	var calls []string
	for _, c := range r.Calls {
		calls = append(calls, part(fmt.Sprintf(`"functionCall":{"id":%s,"name":%s,"args":%s}`, jsonString(c.ID), jsonString(c.Name), c.Args), ""))
	}
	if !stream {
		return "application/json", []byte(chunk(append(append(thought, text...), calls...), "STOP", usageJSON(r)))
	}
	var b bytes.Buffer
	event := func(c string) { b.WriteString("data: " + c + "\r\n\r\n") }
	if len(thought) > 0 {
		event(chunk(thought, "", ""))
	}
	for _, half := range halves(r.Text) {
		event(chunk([]string{part(`"text":`+jsonString(half), "")}, "", ""))
	}
	if len(calls) > 0 {
		event(chunk(calls, "", ""))
	}
	event(chunk([]string{`{"text":""}`}, "STOP", usageJSON(r)))
	return "text/event-stream", b.Bytes()
}

func halves(s string) []string {
	if s == "" {
		return nil
	}
	rs := []rune(s)
	return []string{string(rs[:len(rs)/2]), string(rs[len(rs)/2:])}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (wire) Error(status int) []byte {
	name := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]
	if name == "" {
		name = "INTERNAL"
	}
	return fmt.Appendf(nil, `{"error":{"code":%d,"message":%q,"status":%q}}`, status, http.StatusText(status), name)
}

// ErrorEvent is a stream that begins and then carries an error object in a
// data line, with the status's code and google.rpc status name.
func (w wire) ErrorEvent(status int) (string, []byte) {
	return "text/event-stream", []byte("data: " + chunk([]string{`{"text":"Let me"}`}, "", "") + "\r\n\r\ndata: " + string(w.Error(status)) + "\r\n\r\n")
}

type wireRequest struct {
	Contents []struct {
		Role  string     `json:"role"`
		Parts []wirePart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []wirePart `json:"parts"`
	} `json:"systemInstruction"`
	GenerationConfig struct {
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

type wirePart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature string `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"functionResponse"`
}

func (w wire) Parse(body []byte) (modeltest.Seen, error) { return w.ParsePath("", body) }

// ParsePath reads a request: the path says whether it asks for a stream.
func (wire) ParsePath(path string, body []byte) (modeltest.Seen, error) {
	var r wireRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return modeltest.Seen{}, err
	}
	s := modeltest.Seen{Stream: strings.HasSuffix(path, ":streamGenerateContent")}
	if r.SystemInstruction != nil {
		for _, p := range r.SystemInstruction.Parts {
			s.System += p.Text
		}
	}
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			s.Tools = append(s.Tools, f.Name)
		}
	}
	if sc := r.GenerationConfig.ResponseJSONSchema; len(sc) > 0 {
		var b bytes.Buffer
		json.Compact(&b, sc)
		s.OutputSchema = b.String()
	}
	for _, c := range r.Contents {
		s.Roles = append(s.Roles, c.Role)
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				var args bytes.Buffer
				json.Compact(&args, p.FunctionCall.Args)
				s.ToolUses = append(s.ToolUses, modeltest.Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: args.String()})
			case p.FunctionResponse != nil:
				s.ToolResults = append(s.ToolResults, p.FunctionResponse.ID)
			case p.Thought:
				s.Thinking = append(s.Thinking, p.Text)
			case c.Role == "user":
				s.UserTexts = append(s.UserTexts, p.Text)
			}
			if p.Thought && p.ThoughtSignature != "" {
				s.Signatures = append(s.Signatures, p.ThoughtSignature)
			}
		}
	}
	return s, nil
}
