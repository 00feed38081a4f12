package taskfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// strengthField parses reference: and min_strength:, the task's demand on
// the strength of its own checks (see docs/verification.md).
func (p *parser) strengthField(key string, v *yaml.Node) {
	switch key {
	case "reference":
		p.f.Reference = p.path(v, key)
		p.referenceNode = v
	case "min_strength":
		p.f.MinStrength = p.float(v, key)
		if v.Kind == yaml.ScalarNode && (p.f.MinStrength <= 0 || p.f.MinStrength > 1) {
			p.errorf(v, "min_strength is a mutation score in (0, 1], such as 0.9; got %s", v.Value)
		}
		p.minStrengthNode = v
	}
}

// checkStrengthFields reports what only the whole file can tell.
func (p *parser) checkStrengthFields() {
	if p.minStrengthNode != nil && p.f.Reference == "" && p.referenceNode == nil {
		p.errorf(p.minStrengthNode, "min_strength needs reference: a solution that passes every check, whose mutants the checks must reject")
	}
	if p.referenceNode != nil && p.f.Mode != "generate" {
		p.errorf(p.referenceNode, "reference: is for generate mode, where the candidate is one file (the artifact)")
	}
}

// ChecksDigest is a hash of everything that decides a gate verdict on a
// candidate: the checks as written, the mode and artifact name, and the
// contents of every file the exec checks mount as tests. A strength
// measurement made under one digest holds for any run with the same one.
func (f *File) ChecksDigest() (string, error) {
	h := sha256.New()
	spec, err := json.Marshal(struct {
		Checks         []Check
		Mode, Artifact string
	}{f.Checks, f.Mode, f.Artifact})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%d:%s", len(spec), spec)
	for _, c := range f.Checks {
		if c.Exec == nil {
			continue
		}
		for _, root := range c.Exec.Tests {
			err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				rel, _ := filepath.Rel(f.Dir, path)
				fh, err := os.Open(path)
				if err != nil {
					return err
				}
				defer fh.Close()
				st, err := fh.Stat()
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "\n%d:%s %d:", len(rel), rel, st.Size())
				_, err = io.Copy(h, fh)
				return err
			})
			if err != nil {
				return "", fmt.Errorf("hashing the tests: %w", err)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
