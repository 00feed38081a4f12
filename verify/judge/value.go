package judge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// What the candidate's process sends is checked here, then written out
// afresh for the tests: only the shapes wire.py produces pass, so the
// tests' decoder only ever builds builtin values.

// hello is the candidate's first message: what its module defines, or why
// it did not import.
type hello struct {
	Error     string   `json:"error,omitempty"`
	Functions []string `json:"functions"`
	Classes   []string `json:"classes"`
	Constants [][]any  `json:"constants"`
}

// maxNames bounds the names a module may export.
const maxNames = 10000

// exported is a name the proxy may bind: an identifier (Python's are
// Unicode) that does not start with an underscore, so it cannot replace
// the proxy's own names.
var exported = regexp.MustCompile(`^[\p{L}\p{Nl}][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$`)

func decodeHello(frame []byte) (hello, error) {
	var msg struct {
		Hello *json.RawMessage `json:"hello"`
	}
	if err := strict(frame, &msg); err != nil {
		return hello{}, err
	}
	if msg.Hello == nil {
		return hello{}, errors.New("no hello")
	}
	var h hello
	if err := strict(*msg.Hello, &h); err != nil {
		return hello{}, err
	}
	if h.Error != "" {
		return hello{Error: h.Error}, nil
	}
	if n := len(h.Functions) + len(h.Classes) + len(h.Constants); n > maxNames {
		return hello{}, fmt.Errorf("%d names (the most is %d)", n, maxNames)
	}
	seen := map[string]bool{}
	name := func(n any) error {
		s, ok := n.(string)
		switch {
		case !ok:
			return fmt.Errorf("a name that is not a string: %v", n)
		case !exported.MatchString(s):
			return fmt.Errorf("%q is not a public identifier", s)
		case seen[s]:
			return fmt.Errorf("%q is named twice", s)
		}
		seen[s] = true
		return nil
	}
	for _, n := range append(append([]string(nil), h.Functions...), h.Classes...) {
		if err := name(n); err != nil {
			return hello{}, err
		}
	}
	for _, c := range h.Constants {
		if len(c) != 2 {
			return hello{}, errors.New("a constant that is not a [name, value] pair")
		}
		if err := name(c[0]); err != nil {
			return hello{}, err
		}
		if err := checkValue(c[1], 0, false); err != nil {
			return hello{}, fmt.Errorf("constant %v: %w", c[0], err)
		}
	}
	return h, nil
}

// encode is the hello as the tests get it, and the functions they may call.
func (h hello) encode() ([]byte, map[string]bool) {
	if h.Error != "" {
		return mustJSON(map[string]string{"error": h.Error}), nil
	}
	funcs := make(map[string]bool, len(h.Functions))
	for _, f := range h.Functions {
		funcs[f] = true
	}
	for _, l := range []*[]string{&h.Functions, &h.Classes} {
		if *l == nil {
			*l = []string{}
		}
	}
	if h.Constants == nil {
		h.Constants = [][]any{}
	}
	return mustJSON(h), funcs
}

type exception struct {
	Type    string `json:"type"`
	Builtin bool   `json:"builtin"`
	Msg     string `json:"msg"`
}

// maxMessage bounds an exception's type name and message.
const maxMessage = 4000

// reply is the candidate's answer to one call: exactly one field is
// present (a RawMessage keeps a null as "null", so None is present too).
type reply struct {
	OK          json.RawMessage `json:"ok"`
	Exc         json.RawMessage `json:"exc"`
	Uncrossable json.RawMessage `json:"uncrossable"`
}

// decodeReply checks the candidate's answer to one call: ok (the value),
// exc (an exception) or uncrossable (why the value could not be sent). It
// returns the message for the tests.
func decodeReply(frame []byte) ([]byte, error) {
	var r reply
	if err := strict(frame, &r); err != nil {
		return nil, err
	}
	switch {
	case r.OK != nil && r.Exc == nil && r.Uncrossable == nil:
		var v any
		if err := strict(r.OK, &v); err != nil {
			return nil, err
		}
		if err := checkValue(v, 0, false); err != nil {
			return nil, err
		}
		return mustJSON(map[string]any{"ok": v}), nil
	case r.Exc != nil && r.OK == nil && r.Uncrossable == nil:
		var e exception
		if err := strict(r.Exc, &e); err != nil {
			return nil, err
		}
		if e.Type == "" || len(e.Type) > 200 {
			return nil, errors.New("an exception without a proper type name")
		}
		e.Msg = tail(e.Msg, maxMessage)
		return mustJSON(map[string]exception{"exc": e}), nil
	case r.Uncrossable != nil && r.OK == nil && r.Exc == nil:
		var why string
		if err := strict(r.Uncrossable, &why); err != nil {
			return nil, err
		}
		return judgeError("the function " + tail(why, maxMessage) + ", which cannot cross to the tests (only plain data does: use isolation: in-process to compare other values)"), nil
	}
	return nil, errors.New("not exactly one of ok, exc and uncrossable")
}

// decodeGoReply checks a Go server's answer: ok holds the results as a
// JSON array of any values, which the tests decode into their declared
// types.
func decodeGoReply(frame []byte) ([]byte, error) {
	var r reply
	if err := strict(frame, &r); err != nil {
		return nil, err
	}
	if r.OK == nil || r.Exc != nil || r.Uncrossable != nil {
		return decodeReply(frame) // the exception and the uncrossable are as in Python
	}
	var results []json.RawMessage
	if err := strict(r.OK, &results); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return mustJSON(map[string]any{"ok": results}), nil
}

// strict decodes one JSON value with nothing after it, keeping numbers as
// they were written and refusing unknown fields.
func strict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the message")
	}
	return nil
}

// maxDepth is wire.py's _MAX_DEPTH.
const maxDepth = 100

// checkValue accepts what wire.py's _enc writes: JSON scalars, lists, and
// objects of one tag. hashable says the value is a set element or dict
// key, which lists, sets and dicts cannot be.
func checkValue(v any, depth int, hashable bool) error {
	if depth > maxDepth {
		return fmt.Errorf("a value nested more than %d deep", maxDepth)
	}
	switch v := v.(type) {
	case nil, bool, string, json.Number:
		return nil
	case []any:
		if hashable {
			return errors.New("a list as a set element or dict key")
		}
		return checkAll(v, depth, false)
	case map[string]any:
		if len(v) != 1 {
			return fmt.Errorf("an object of %d fields (a tag has one)", len(v))
		}
		for tag, x := range v {
			return checkTagged(tag, x, depth, hashable)
		}
	}
	return fmt.Errorf("an unexpected %T", v)
}

func checkTagged(tag string, x any, depth int, hashable bool) error {
	items, isList := x.([]any)
	switch tag {
	case "$tuple", "$set", "$frozenset", "$dict":
		if !isList {
			return fmt.Errorf("%s of %T, not a list", tag, x)
		}
	}
	switch tag {
	case "$tuple":
		return checkAll(items, depth, hashable)
	case "$frozenset":
		return checkAll(items, depth, true)
	case "$set":
		if hashable {
			return errors.New("a set as a set element or dict key")
		}
		return checkAll(items, depth, true)
	case "$dict":
		if hashable {
			return errors.New("a dict as a set element or dict key")
		}
		for _, it := range items {
			pair, ok := it.([]any)
			if !ok || len(pair) != 2 {
				return errors.New("a dict entry that is not a [key, value] pair")
			}
			if err := checkValue(pair[0], depth+1, true); err != nil {
				return err
			}
			if err := checkValue(pair[1], depth+1, false); err != nil {
				return err
			}
		}
		return nil
	case "$bytes":
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("$bytes of %T, not a string", x)
		}
		_, err := base64.StdEncoding.Strict().DecodeString(s)
		return err
	case "$float":
		switch x {
		case "nan", "inf", "-inf":
			return nil
		}
		return fmt.Errorf("$float %v", x)
	}
	return fmt.Errorf("unknown tag %q", tag)
}

func checkAll(items []any, depth int, hashable bool) error {
	for _, it := range items {
		if err := checkValue(it, depth+1, hashable); err != nil {
			return err
		}
	}
	return nil
}
