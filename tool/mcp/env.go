package mcp

import (
	"os"
	"sort"
)

// Inherited are the only variables a stdio server inherits from this
// process: enough to find programs, a home for caches and a locale.
var Inherited = []string{"PATH", "HOME", "LANG"}

// Environ returns a stdio server's environment: the Inherited variables
// that are set here, then extra, which overrides them, sorted by name.
// Nothing else passes: API keys and other secrets in this process's
// environment reach a server only when extra names them.
func Environ(extra map[string]string) []string {
	env := map[string]string{}
	for _, k := range Inherited {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + env[k]
	}
	return out
}
