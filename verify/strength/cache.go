package strength

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// mutatorsVersion changes whenever the Go mutators change what they make;
// the Python mutators' version is their script's hash.
const mutatorsVersion = "go-1"

// CacheKey names a measurement: the digest of the checks (and their
// tests), the reference, and the mutators. The same key means the same
// mutants judged by the same checks, so the same report.
func CacheKey(checksDigest string, reference []byte) string {
	h := sha256.New()
	py := sha256.Sum256([]byte(mutatePy))
	for _, part := range [][]byte{[]byte(mutatorsVersion), py[:], []byte(checksDigest), reference} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Cache keeps reports in a directory, one JSON file per key.
type Cache struct{ Dir string }

// Load returns the report stored under key; ok is false when there is none.
// An unreadable entry counts as none (it is measured again).
func (c Cache) Load(key string) (rep Report, ok bool, err error) {
	data, err := os.ReadFile(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return Report{}, false, nil
	}
	if err != nil {
		return Report{}, false, err
	}
	if json.Unmarshal(data, &rep) != nil {
		return Report{}, false, nil
	}
	return rep, true, nil
}

// Store writes rep under key, atomically.
func (c Cache) Store(key string, rep Report) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.Dir, key+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), c.path(key))
}

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key+".json") }
