package taskfile

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/provider"
)

// model reads model:, a model string or a list of them (a fallback chain,
// tried in order), into the chain's one string: its models joined by
// commas, the form model/provider opens.
func (p *parser) model(n *yaml.Node, field string) string {
	var s string
	if n.Kind == yaml.SequenceNode {
		names := p.strList(n, field)
		if len(names) == 0 {
			p.errorf(n, "%s: an empty list names no model", field)
			return ""
		}
		for i, name := range names {
			if strings.Contains(name, ",") {
				p.errorf(n.Content[i], "%s: %q: a model of a list cannot itself be a list (a comma)", field, name)
				return ""
			}
		}
		s = strings.Join(names, ",")
	} else {
		s = p.str(n, field)
	}
	if s == "" {
		return ""
	}
	if _, err := provider.ParseChain(s); err != nil {
		p.errorf(n, "%s: %v", field, err)
	} else if names := strings.Split(s, ","); len(slices.Compact(slices.Sorted(slices.Values(names)))) < len(names) {
		p.errorf(n, "%s: a model is listed twice", field)
	}
	return s
}

// ParseModel reads a model: node, a model string or a list of them (a
// fallback chain), as a task file's model: is read, for other files (an
// eval suite's) that name models the same way.
func ParseModel(n *yaml.Node, file, field string) (string, Problems) {
	p := &parser{file: file, f: &File{}}
	s := p.model(n, field)
	return s, p.problems
}

// limitFields are the fields of one provider's provider_limits:.
var limitFields = []string{"requests_per_minute", "tokens_per_minute", "max_in_flight"}

// providerLimits reads provider_limits: {PROVIDER: {requests_per_minute: N,
// tokens_per_minute: N, max_in_flight: N}}.
func (p *parser) providerLimits(n *yaml.Node, where string) map[string]limit.Limits {
	out := map[string]limit.Limits{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping of providers (anthropic, openai, gemini, openai-compatible:BASE_URL) to their limits", where)
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := limit.CheckProvider(k.Value); err != nil {
			p.errorf(k, "%s: %v", where, err)
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.errorf(k, "%s.%s is given twice", where, k.Value)
			continue
		}
		var l limit.Limits
		at := where + "." + k.Value
		p.fields(v, at, limitFields, func(key string, v *yaml.Node) {
			switch key {
			case "requests_per_minute":
				l.RequestsPerMinute = p.int(v, at+"."+key, 1)
			case "tokens_per_minute":
				l.TokensPerMinute = p.int64(v, at+"."+key, 1)
			case "max_in_flight":
				l.MaxInFlight = p.int(v, at+"."+key, 1)
			}
		})
		out[k.Value] = l
	}
	return out
}

// ParseProviderLimits reads a provider_limits: node as a task file's is read, for
// other files (an eval suite's).
func ParseProviderLimits(n *yaml.Node, file, where string) (map[string]limit.Limits, Problems) {
	p := &parser{file: file, f: &File{}}
	l := p.providerLimits(n, where)
	return l, p.problems
}

// SetLimits tightens reg by limits, in provider order.
func SetLimits(reg *limit.Registry, limits map[string]limit.Limits) {
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		reg.Set(name, limits[name])
	}
}
