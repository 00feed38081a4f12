package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/ratchetloop/ratchet/model"
)

// keyVersion names the key's canonical form. Changing what goes into a key
// changes it, so that an old cache file misses rather than answers a
// request it was not asked.
const keyVersion = "ratchet-cache-key/1"

// keyed is what a key is the hash of: everything the provider is sent that
// can change its reply. Request.Purpose is not in it: it is ratchet's note
// of why it asked, never sent to the provider, so two requests that differ
// only in purpose get the same reply.
type keyed struct {
	Version         string       `json:"v"`
	Model           string       `json:"model"`
	System          string       `json:"system"`
	Messages        []keyMessage `json:"messages"`
	Tools           []keyTool    `json:"tools"`
	MaxOutputTokens int          `json:"max_output_tokens"`
	// Reasoning and Signature are omitted when unset, so that the keys of
	// requests without them stay what they were.
	Reasoning *model.Reasoning `json:"reasoning,omitempty"`
}

type keyMessage struct {
	Role    model.Role `json:"role"`
	Content []keyBlock `json:"content"`
}

// keyBlock is a model.Block with its input canonical: valid JSON in
// Input, anything else as it is in BadInput, so the two never collide.
type keyBlock struct {
	Type     model.BlockType `json:"type"`
	Text     string          `json:"text"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input,omitempty"`
	BadInput string          `json:"bad_input,omitempty"`
	IsError  bool            `json:"is_error"`
	Sig      string          `json:"signature,omitempty"`
}

type keyTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	BadSchema   string          `json:"bad_schema,omitempty"`
}

// Key returns the hex SHA-256 of the canonical form of req sent to the
// model named name. Struct fields marshal in a fixed order; the raw JSON
// a request carries (tool inputs, input schemas) is re-encoded with its
// object keys sorted, its spacing removed and its numbers as written, so
// that {"a":1,"b":2} and { "b": 2, "a": 1 } give one key. Raw JSON that
// does not parse (a model's malformed tool arguments) is hashed as it is.
func Key(name string, req model.Request) string {
	k := keyed{Version: keyVersion, Model: name, System: req.System, MaxOutputTokens: req.MaxOutputTokens, Reasoning: req.Reasoning}
	k.Messages = make([]keyMessage, len(req.Messages))
	for i, m := range req.Messages {
		km := keyMessage{Role: m.Role, Content: make([]keyBlock, len(m.Content))}
		for j, b := range m.Content {
			kb := keyBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, IsError: b.IsError, Sig: b.Signature}
			kb.Input, kb.BadInput = canonical(b.Input)
			km.Content[j] = kb
		}
		k.Messages[i] = km
	}
	k.Tools = make([]keyTool, len(req.Tools))
	for i, t := range req.Tools {
		kt := keyTool{Name: t.Name, Description: t.Description}
		kt.Schema, kt.BadSchema = canonical(t.InputSchema)
		k.Tools[i] = kt
	}
	// Every field is a string, a number, a bool or canonical JSON: this
	// cannot fail.
	data, err := json.Marshal(k)
	if err != nil {
		panic("cache: encoding a key: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// canonical re-encodes raw JSON with sorted object keys; raw that is not
// valid JSON comes back as bad, unchanged.
func canonical(raw json.RawMessage) (good json.RawMessage, bad string) {
	if len(raw) == 0 {
		return nil, ""
	}
	if !json.Valid(raw) {
		return nil, string(raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, string(raw)
	}
	return out, ""
}
