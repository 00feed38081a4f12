package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// A tool call's arguments are checked one of two ways.
//
// A [Func] tool whose schema is the one derived from its argument type
// is checked by decoding the arguments into that type, strictly (see
// funcTool.prepare): the decode rejects unknown members, values of the
// wrong JSON type and duplicate names at every depth, and a member the
// decode left at its zero value (absent, null or zero: the decode cannot
// tell which) sends the call the other way. That decode is the one the
// tool needed anyway, so an accepted call costs one decode and no
// validation.
//
// Every other call, and every call the typed decode did not accept, is
// validated against the tool's schema by santhosh-tekuri/jsonschema,
// which names the place in the arguments of each problem
// ("$.items[2].price: minimum: got -1, want 0"). It was measured against
// google/jsonschema-go on the same schemas (BenchmarkRawSchema) and took
// 0.8× its time on a flat object and under half on a nested one, whose
// errors name only the schema's path. It checks "format" as the schema's
// draft says: an assertion up to draft-07, an annotation from 2019-09 on
// (jsonschema-go checked it in no draft).

// resolved caches compiled schemas by their JSON text. A run builds its
// registry afresh, and thousands of concurrent runs of the same tools should
// share one compiled schema each rather than compile and hold their own. A
// compiled *jsonschema.Schema is read-only, so sharing it is safe.
var resolved sync.Map // string → *jsonschema.Schema

// resolveSchema compiles an argument schema. Providers require the
// top-level type to be "object".
func resolveSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if rs, ok := resolved.Load(string(raw)); ok {
		return rs.(*jsonschema.Schema), nil
	}
	rs, err := resolveSchemaUncached(raw)
	if err != nil {
		return nil, err
	}
	resolved.Store(string(raw), rs)
	return rs, nil
}

// schemaURL names the one resource each compiler holds; no message the
// model sees shows it.
const schemaURL = "urn:ratchet:tool-arguments"

func resolveSchemaUncached(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 {
		return nil, errors.New("schema is missing")
	}
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("schema is not valid: %v", err)
	}
	if top.Type != "object" {
		return nil, errors.New(`schema must have "type": "object"`)
	}
	// The validator's own decoding keeps numbers exact (json.Number).
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid: %v", err)
	}
	c := jsonschema.NewCompiler()
	// A schema may come from an MCP server or a task file: its $refs must
	// not make ratchet read a file or a URL. An empty scheme table loads
	// nothing.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("schema is not valid: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		// A schema that fails its metaschema says where, on one line.
		if sve := (*jsonschema.SchemaValidationError)(nil); errors.As(err, &sve) {
			return nil, fmt.Errorf("schema is not valid: %s", explain(sve.Err, doc))
		}
		return nil, fmt.Errorf("schema is not valid: %v", err)
	}
	return sch, nil
}

// checkArgs says what is wrong with args for ent's tool, or "" if
// nothing is.
func checkArgs(ent *entry, args json.RawMessage) string {
	name := ent.info.Name
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Sprintf("tool %q: arguments are not valid JSON: %v", name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("tool %q: arguments must be a JSON object, not %s", name, jsonKind(v))
	}
	if err := ent.schema.Validate(v); err != nil {
		return fmt.Sprintf("tool %q: arguments do not match the schema: %s", name, explain(err, v))
	}
	return ""
}

// printer renders the validator's messages in English.
var printer = message.NewPrinter(language.English)

// maxProblems bounds the problems one message lists; the model fixes
// those and hears of the rest next time.
const maxProblems = 5

// explain says what a validation error found, one problem per place:
// "$.items[2].price: minimum: got -1, want 0; $.name: got number, want
// string", sorted by place, so that the same arguments always read the
// same (the validator visits properties in map order).
func explain(err error, v any) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var problems []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			problems = append(problems, instancePath(e.InstanceLocation, v)+": "+e.ErrorKind.LocalizedString(printer))
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	slices.Sort(problems)
	problems = slices.Compact(problems)
	if len(problems) > maxProblems {
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", len(problems)-maxProblems))
	}
	return strings.Join(problems, "; ")
}

// instancePath writes a place in the arguments as a path from "$": a
// member by name (".price", or `["odd name"]` when it is not an
// identifier) and an array item by index ("[2]"). Which one a segment is
// comes from the arguments themselves, so that a member named "2" reads
// `["2"]`.
func instancePath(segs []string, v any) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range segs {
		switch node := v.(type) {
		case []any:
			b.WriteString("[" + s + "]")
			if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(node) {
				v = node[i]
			}
		default:
			if identifier(s) {
				b.WriteString("." + s)
			} else {
				b.WriteString("[" + strconv.Quote(s) + "]")
			}
			if m, ok := node.(map[string]any); ok {
				v = m[s]
			}
		}
	}
	return b.String()
}

// identifier reports whether s can follow a dot in a path: a letter or
// underscore, then letters, digits and underscores.
func identifier(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
