package check

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/verify"
)

// JSONSchema returns a check, named "json_schema", that passes when the
// answer is one JSON value valid against schema (JSON Schema draft 2020-12 or
// draft-07, by the schema's $schema; 2020-12 when absent). The schema is
// resolved once, here; remote $refs are not loaded and are a config error.
//
// A failure names the place in the answer as a path from the top-level
// value, "$" ("$.items[2].name"), and the reason in words: "$.age: is a
// string, but the schema wants an integer". The validator stops at the
// first problem it finds and does not say which array item failed an items
// schema: the items are then validated one at a time (up to 256) to name
// it, and a path reads "$.items[*].name" (some item) when none fails alone.
// When the answer has several problems, which one is reported may differ
// from run to run (the validator walks properties in map order), and
// fixing it reveals the next.
// An answer that is not JSON fails with the syntax error's line and column.
//
// The provenance is Validation.
func JSONSchema(schema json.RawMessage) (verify.Verifier, error) {
	sc, err := compileSchema("json_schema", schema)
	if err != nil {
		return nil, err
	}
	return &verifier{name: "json_schema", prov: verify.Validation, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		v, bad := sc.judge(c.Answer)
		if bad != nil {
			return *bad, nil
		}
		if path, reason, ok := sc.check(v); !ok {
			return verify.Verdict{Confidence: 1, Detail: "the answer does not match the JSON schema at " + path + ": " + reason, Where: path}, nil
		}
		return verify.Verdict{OK: true, Confidence: 1, Detail: "the answer matches the JSON schema"}, nil
	}}, nil
}

// Output returns the check of a typed answer, named "output_schema" (the
// loop's OutputCheck): the answer must be one JSON value valid against
// schema, as for JSONSchema, and then decode must accept it (decode the
// value into a Go type, say, and apply its own rules; nil: no decoding).
// A failure's Where is the JSON path and its Detail the rule in words, so
// the feedback reads "output_schema failed at $.items[2].price: is -1,
// below the minimum 0"; decode's error is given as it is.
func Output(schema json.RawMessage, decode func([]byte) error) (verify.Verifier, error) {
	sc, err := compileSchema("output_schema", schema)
	if err != nil {
		return nil, err
	}
	return &verifier{name: "output_schema", prov: verify.Validation, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		v, bad := sc.judge(c.Answer)
		if bad != nil {
			return *bad, nil
		}
		if path, reason, ok := sc.check(v); !ok {
			return verify.Verdict{Confidence: 1, Detail: reason, Where: path}, nil
		}
		if decode != nil {
			if err := decodeSafely(decode, []byte(c.Answer)); err != nil {
				return verify.Verdict{Confidence: 1, Detail: clip(err.Error(), 600)}, nil
			}
		}
		return verify.Verdict{OK: true, Confidence: 1, Detail: "the answer matches the output schema"}, nil
	}}, nil
}

// decodeSafely calls decode, turning a panic (the caller's own rules are
// code too) into an error.
func decodeSafely(decode func([]byte) error, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoding the answer failed: %v", r)
		}
	}()
	return decode(b)
}

// schemaCheck is a resolved schema with its raw JSON, which feedback
// quotes.
type schemaCheck struct {
	rs  *jsonschema.Resolved
	raw any
}

// compileSchema resolves schema for the check name, once.
func compileSchema(name string, schema json.RawMessage) (*schemaCheck, error) {
	if len(strings.TrimSpace(string(schema))) == 0 {
		return nil, fmt.Errorf("%s check: the schema is empty", name)
	}
	var raw any // the schema as plain JSON, to quote its bounds in feedback
	if err := json.Unmarshal(schema, &raw); err != nil {
		return nil, fmt.Errorf("%s check: the schema is not JSON: %w", name, err)
	}
	switch raw.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("%s check: the schema must be a JSON object (or true or false), got %s", name, clip(oneLine(string(schema)), 100))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("%s check: the schema is not a JSON Schema: %w", name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%s check: the schema does not resolve: %w", name, err)
	}
	// Validate checks the schema's version before anything else.
	if err := rs.Validate(nil); err != nil && strings.HasPrefix(err.Error(), "cannot validate version") {
		return nil, fmt.Errorf("%s check: %w", name, err)
	}
	return &schemaCheck{rs: rs, raw: raw}, nil
}

// judge decodes the answer, or returns the failing verdict of an answer
// that is not JSON.
func (sc *schemaCheck) judge(answer string) (any, *verify.Verdict) {
	var v any
	if err := json.Unmarshal([]byte(answer), &v); err != nil {
		bad := jsonFailure(answer, err, "the answer is not valid JSON")
		return nil, &bad
	}
	return v, nil
}

// check validates v: the path of the first problem found and the reason in
// words, or ok. An item the validator does not name ([*]) is found by
// validating the items one at a time.
func (sc *schemaCheck) check(v any) (path, reason string, ok bool) {
	err := validate(sc.rs, v)
	if err == nil {
		return "", "", true
	}
	segs, reason := explain(err.Error(), sc.raw)
	sc.nameItems(v, segs, formatPath(segs), reason)
	return formatPath(segs), reason, false
}

// maxProbed bounds the items validated one at a time to name one.
const maxProbed = 256

// nameItems replaces each unnamed item step of segs ([*]) by the index of
// the first item that alone fails with the same path and reason: the
// array at that step is replaced by that one item and v validated again.
// A step no item explains alone stays unnamed.
func (sc *schemaCheck) nameItems(v any, segs []pathSeg, path, reason string) {
	for k := range segs {
		if !segs[k].item || !segs[k].any {
			continue
		}
		arr, ok := valueAt(v, segs[:k]).([]any)
		if !ok {
			return
		}
		for i := range min(len(arr), maxProbed) {
			probe := replaceAt(v, segs[:k], []any{arr[i]})
			err := validate(sc.rs, probe)
			if err == nil {
				continue
			}
			if p, r := explain(err.Error(), sc.raw); formatPath(p) == path && r == reason {
				segs[k] = pathSeg{item: true, index: i}
				break
			}
		}
		if segs[k].any {
			return // later steps are below an item not found
		}
	}
}

// valueAt follows named steps from v; nil when one is missing.
func valueAt(v any, segs []pathSeg) any {
	for _, s := range segs {
		switch {
		case s.item && !s.any:
			a, ok := v.([]any)
			if !ok || s.index >= len(a) {
				return nil
			}
			v = a[s.index]
		case !s.item && !s.any && !s.names:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[s.key]
		default:
			return nil
		}
	}
	return v
}

// replaceAt returns v with the value at segs replaced by with, copying
// only the objects and arrays on the way.
func replaceAt(v any, segs []pathSeg, with any) any {
	if len(segs) == 0 {
		return with
	}
	s := segs[0]
	switch x := v.(type) {
	case []any:
		if !s.item || s.any || s.index >= len(x) {
			return v
		}
		c := slices.Clone(x)
		c[s.index] = replaceAt(x[s.index], segs[1:], with)
		return c
	case map[string]any:
		if s.item || s.any || s.names {
			return v
		}
		c := maps.Clone(x)
		c[s.key] = replaceAt(x[s.key], segs[1:], with)
		return c
	}
	return v
}

// validate runs the validator, turning a panic (the library asserts its
// invariants) into an error.
func validate(rs *jsonschema.Resolved, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the validator failed: %v", r)
		}
	}()
	return rs.Validate(v)
}

// explainSchemaError turns a jsonschema-go validation error into the path of
// the failing value in the instance and a reason in words (the schema
// checks use schemaCheck.check, which also names unnamed items).
//
// The library's errors read "validating root: validating /properties/a:
// validating /properties/a/items: <keyword>: <message>": a chain of schema
// locations, outermost first. The instance path is rebuilt from each step
// down the chain (properties/K is member K, items is some item, prefixItems/N
// is item N); a step that is not below the previous one is a $ref jump and
// leaves the instance where it is.
func explainSchemaError(msg string, rawSchema any) (path, reason string) {
	segs, reason := explain(msg, rawSchema)
	return formatPath(segs), reason
}

// explain is explainSchemaError with the path as steps.
func explain(msg string, rawSchema any) ([]pathSeg, string) {
	chain, rest := schemaChain(msg)
	ptr := ""
	if len(chain) > 0 {
		ptr = chain[len(chain)-1]
	}
	return instancePath(chain), clip(explainReason(rest, ptr, rawSchema), 600)
}

// schemaChain splits the "validating X: " prefixes off msg.
func schemaChain(msg string) (chain []string, rest string) {
	for {
		after, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			return chain, msg
		}
		loc, tail, ok := strings.Cut(after, ": ")
		if !ok {
			return chain, msg
		}
		chain, msg = append(chain, loc), tail
	}
}

// pathSeg is one step into the instance: a member name, an item index, or
// some member or item not named by the validator (index -1, or key "" with
// any set).
type pathSeg struct {
	key   string
	index int
	item  bool // an array item
	any   bool // the validator does not say which
	names bool // a property name rather than a value
}

func instancePath(chain []string) []pathSeg { return instancePathFrom("", chain) }

// instancePathFrom is instancePath for a chain that starts below the schema
// at pointer base.
func instancePathFrom(base string, chain []string) []pathSeg {
	var segs []pathSeg
	prev := base
	for _, cur := range chain {
		if !strings.HasPrefix(cur, "/") { // "root" or a schema's $id
			prev = ""
			continue
		}
		if rel, ok := strings.CutPrefix(cur, prev+"/"); ok {
			segs = append(segs, relPath(strings.Split(rel, "/"))...)
		}
		prev = cur
	}
	return segs
}

// relPath maps schema pointer segments below one schema to instance steps.
func relPath(s []string) []pathSeg {
	var segs []pathSeg
	isIndex := func(i int) bool {
		if i >= len(s) {
			return false
		}
		_, err := strconv.Atoi(s[i])
		return err == nil
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case "properties":
			if i+1 < len(s) {
				segs = append(segs, pathSeg{key: unescapePointer(s[i+1])})
			}
			i += 2
		case "patternProperties":
			segs = append(segs, pathSeg{any: true})
			i += 2
		case "additionalProperties", "unevaluatedProperties":
			segs = append(segs, pathSeg{any: true})
			i++
		case "propertyNames":
			segs = append(segs, pathSeg{any: true, names: true})
			i++
		case "prefixItems":
			if n, err := strconv.Atoi(at0(s, i+1)); err == nil {
				segs = append(segs, pathSeg{item: true, index: n})
			}
			i += 2
		case "items":
			if isIndex(i + 1) { // draft-07 items as an array
				n, _ := strconv.Atoi(s[i+1])
				segs = append(segs, pathSeg{item: true, index: n})
				i += 2
				continue
			}
			segs = append(segs, pathSeg{item: true, any: true})
			i++
		case "additionalItems", "unevaluatedItems", "contains":
			segs = append(segs, pathSeg{item: true, any: true})
			i++
		case "allOf", "anyOf", "oneOf", "$defs", "definitions", "dependentSchemas", "dependencies":
			i += 2
		default: // not, if, then, else and anything unknown keep the instance
			i++
		}
	}
	return segs
}

func at0(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// formatPath writes instance steps as "$.a[0].b", quoting odd member names
// ($["a b"]) and writing an unnamed item as [*] and an unnamed member as .*.
func formatPath(segs []pathSeg) string {
	var b strings.Builder
	b.WriteString("$")
	names := false
	for _, s := range segs {
		switch {
		case s.names:
			names = true
		case s.item && s.any:
			b.WriteString("[*]")
		case s.item:
			fmt.Fprintf(&b, "[%d]", s.index)
		case s.any:
			b.WriteString(".*")
		case identifier.MatchString(s.key):
			b.WriteString("." + s.key)
		default:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		}
	}
	if names {
		b.WriteString(" (a property name)")
	}
	return b.String()
}

// subschema returns the object at JSON pointer ptr in the raw schema, or nil.
func subschema(raw any, ptr string) map[string]any {
	m, _ := rawAt(raw, ptr).(map[string]any)
	return m
}

// rawAt returns the value at JSON pointer ptr in the raw schema, or nil.
func rawAt(raw any, ptr string) any {
	if ptr == "root" {
		ptr = ""
	}
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return nil // an $id: not a place in this document we can find
	}
	cur := raw
	if ptr != "" {
		for _, seg := range strings.Split(ptr[1:], "/") {
			seg = unescapePointer(seg)
			switch v := cur.(type) {
			case map[string]any:
				cur = v[seg]
			case []any:
				n, err := strconv.Atoi(seg)
				if err != nil || n < 0 || n >= len(v) {
					return nil
				}
				cur = v[n]
			default:
				return nil
			}
		}
	}
	return cur
}

var (
	reType       = regexp.MustCompile(`(?s)^type: .* has type "([a-z]+)", want (one of )?"([^"]*)"$`)
	reRequired   = regexp.MustCompile(`(?s)^required: missing properties: \[(.*)\]$`)
	reAdditional = regexp.MustCompile(`(?s)^unexpected additional properties \[(.*)\]$`)
	reBound      = regexp.MustCompile(`(?s)^(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): (\S+) is`)
	reLength     = regexp.MustCompile(`(?s)^(minLength|maxLength): .* contains (\d+) Unicode code points, (?:fewer|more) than (\d+)$`)
	rePattern    = regexp.MustCompile(`(?s)^pattern: (.*) does not match regular expression (".*")$`)
	reCount      = regexp.MustCompile(`^(minItems|maxItems): array length (\d+) is (?:less|greater) than (\d+)$|^(minProperties|maxProperties): object has (\d+) properties, (?:less|greater) than (\d+)$`)
	reUnique     = regexp.MustCompile(`^uniqueItems: array items (\d+) and (\d+) are equal$`)
)

// explainReason rewrites the innermost message in words, quoting the
// schema's own values (from the raw schema at ptr) where it helps.
func explainReason(msg, ptr string, raw any) string {
	sub := subschema(raw, ptr)
	keyword, _, _ := strings.Cut(msg, ":")
	schemaValue := func(k string) string {
		if v, ok := sub[k]; ok {
			b, err := json.Marshal(v)
			if err == nil {
				return clip(string(b), 200)
			}
		}
		return ""
	}
	if m := reType.FindStringSubmatch(msg); m != nil {
		if m[2] != "" {
			return fmt.Sprintf("is %s, but the schema wants one of: %s", article(m[1]), m[3])
		}
		return fmt.Sprintf("is %s, but the schema wants %s", article(m[1]), article(m[3]))
	}
	if m := reRequired.FindStringSubmatch(msg); m != nil {
		names := quotedList(m[1])
		if len(names) == 1 {
			return "is missing the required property " + names[0]
		}
		return "is missing the required properties " + strings.Join(names, ", ")
	}
	if m := reAdditional.FindStringSubmatch(msg); m != nil {
		return "has properties the schema does not allow: " + strings.Join(quotedList(m[1]), ", ")
	}
	if m := reBound.FindStringSubmatch(msg); m != nil {
		bound := schemaValue(m[1])
		if bound == "" {
			return msg
		}
		what := map[string]string{
			"minimum":          "below the minimum",
			"maximum":          "above the maximum",
			"exclusiveMinimum": "not above the exclusive minimum",
			"exclusiveMaximum": "not below the exclusive maximum",
			"multipleOf":       "not a multiple of",
		}[m[1]]
		return fmt.Sprintf("is %s, %s %s", ratString(m[2]), what, bound)
	}
	if m := reLength.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "minLength" {
			return fmt.Sprintf("has %s, fewer than the minimum %s", words.Count(n, "character"), m[3])
		}
		return fmt.Sprintf("has %s, more than the maximum %s", words.Count(n, "character"), m[3])
	}
	if m := rePattern.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s does not match the pattern %s", clip(m[1], 200), m[2])
	}
	if m := reCount.FindStringSubmatch(msg); m != nil {
		kw, got, bound, noun := m[1], m[2], m[3], "item"
		if kw == "" {
			kw, got, bound, noun = m[4], m[5], m[6], "property"
		}
		n, _ := strconv.Atoi(got)
		count := words.Count(n, noun)
		if noun == "property" && n != 1 {
			count = got + " properties"
		}
		if strings.HasPrefix(kw, "min") {
			return fmt.Sprintf("has %s, fewer than the minimum %s", count, bound)
		}
		return fmt.Sprintf("has %s, more than the maximum %s", count, bound)
	}
	if m := reUnique.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("has equal items [%s] and [%s]; the items must be unique", m[2], m[1])
	}
	switch keyword {
	case "enum":
		if v := schemaValue("enum"); v != "" {
			return "is not one of the allowed values " + v
		}
	case "const":
		if v := schemaValue("const"); v != "" {
			return "must equal " + v
		}
	case "anyOf":
		return explainAnyOf(msg, ptr, raw)
	case "oneOf":
		if strings.HasPrefix(msg, "oneOf: validated against both") {
			return "matches more than one of the alternatives (oneOf); it must match exactly one"
		}
		return "matches none of the alternatives (oneOf)"
	case "not":
		if rawAt(raw, ptr) == false {
			return "is not allowed here (the schema is false)"
		}
		return "matches a schema it must not match (not)"
	case "contains":
		return "has no item matching the schema's contains"
	}
	return oneLine(msg)
}

// explainAnyOf lists why each alternative of an anyOf failed. The library
// writes the first line and then each alternative's error on lines that
// start "validating PTR/anyOf/N".
func explainAnyOf(msg, ptr string, raw any) string {
	base := ptr
	if !strings.HasPrefix(base, "/") {
		base = ""
	}
	marker := "\nvalidating " + base + "/anyOf/"
	parts := strings.Split(msg, marker)
	var alts []string
	for i, p := range parts[1:] {
		chain, rest := schemaChain("validating " + base + "/anyOf/" + p)
		if len(chain) == 0 {
			continue
		}
		where := formatPath(instancePathFrom(base, chain))
		reason := explainReason(rest, chain[len(chain)-1], raw)
		if where != "$" {
			reason = strings.TrimPrefix(where, "$") + " " + reason
		}
		alts = append(alts, fmt.Sprintf("(%d) %s", i+1, clip(oneLine(reason), 200)))
	}
	if len(alts) == 0 {
		return "matches none of the alternatives (anyOf)"
	}
	return "matches none of the alternatives (anyOf): " + strings.Join(alts, "; ")
}

// ratString writes a number the validator printed as a big.Rat ("-1/1") as
// a plain number ("-1").
func ratString(s string) string {
	r, ok := new(big.Rat).SetString(s)
	switch {
	case !ok:
		return s
	case r.IsInt():
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// article puts "a" or "an" before a JSON type name; null has none.
func article(t string) string {
	switch {
	case t == "null":
		return "null"
	case strings.ContainsAny(t[:min(1, len(t))], "aeiou"):
		return "an " + t
	}
	return "a " + t
}

// quotedList splits `"a" "b"` (Go's %q of a []string, brackets removed) into
// its quoted items, keeping the quotes.
func quotedList(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return append(out, s)
		}
		out, s = append(out, q), s[len(q):]
	}
	return out
}
