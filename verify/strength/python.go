package strength

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

//go:embed mutate.py
var mutatePy string

// pythonTimeout bounds the mutant generator: it parses and compiles the
// reference once per mutant.
const pythonTimeout = 60 * time.Second

// pythonMutants runs mutate.py on src. -I -S keep the user's site
// packages and environment out of it.
func pythonMutants(ctx context.Context, python string, src []byte) ([]Mutant, int, int, error) {
	if python == "" {
		python = "python3"
	}
	ctx, cancel := context.WithTimeout(ctx, pythonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", mutatePy)
	cmd.Stdin = bytes.NewReader(src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, 0, 0, fmt.Errorf("making python mutants with %s: %v: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Error   string `json:"error"`
		Mutants []struct {
			Line        int    `json:"line"`
			Kind        string `json:"kind"`
			Description string `json:"description"`
			Source      string `json:"source"`
			Equivalent  bool   `json:"equivalent"`
		} `json:"mutants"`
		Stillborn  int `json:"stillborn"`
		Duplicates int `json:"duplicates"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, 0, 0, fmt.Errorf("making python mutants: reading the generator's output: %v", err)
	}
	if out.Error != "" {
		return nil, 0, 0, fmt.Errorf("making python mutants: %s", out.Error)
	}
	ms := make([]Mutant, len(out.Mutants))
	for i, m := range out.Mutants {
		ms[i] = Mutant{Line: m.Line, Kind: m.Kind, Description: m.Description, Source: m.Source, Equivalent: m.Equivalent}
	}
	return ms, out.Stillborn, out.Duplicates, nil
}
