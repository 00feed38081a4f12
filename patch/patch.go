// Package patch makes the result of an agent run on a copied workspace a
// patch: Begin copies the workspace and remembers its start, Take diffs the
// copy against that start, and Apply applies the diff to the original,
// refusing if the original changed since the start.
//
// A git workspace (one whose root holds .git, with git installed) is
// diffed by git: the start is a tree written into a private git directory
// outside the copy, so nothing the agent does to the copy's .git (a config
// that runs a command, a hook) reaches the git that ratchet runs, and the
// diff is git diff output, with .gitignore honoured and binary files named,
// not dumped. Any other workspace keeps a pristine copy of its start and is
// diffed here, into a unified diff in git's extended format that git apply
// and patch -p1 both accept.
package patch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
)

// MaxDiff is the largest diff Take keeps; a larger one is dropped and the
// Patch's Problem says so (the changes stay in the copy).
const MaxDiff = 4 << 20

// Start is where a workspace copy started: what its patch is taken
// against. It is plain data, kept with the run so that a resumed run (or
// another process) can take the patch.
type Start struct {
	// Original is the workspace that was copied; Copy the copy the run
	// works in.
	Original string `json:"original"`
	Copy     string `json:"copy"`
	// Base is private to this package, outside the copy: a git directory
	// holding the start tree (Git), or a pristine copy of the start.
	Base string `json:"base"`
	Git  bool   `json:"git,omitempty"`
	// Tree is the start tree's hash in Base (Git).
	Tree string `json:"tree,omitempty"`
	// Fingerprint is the original's state at the start (see Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// Layer, set by BeginLayer, is the run's layer over Original: Copy is
	// its view, Base is unused, and the patch is read from its upper
	// layer.
	Layer *layer.Layer `json:"layer,omitempty"`
}

// Begin copies the workspace original into a new directory under the
// temporary directory and records its start. The caller removes s.Dir()
// when the copy is no longer wanted.
func Begin(ctx context.Context, original string) (*Start, error) {
	original, err := filepath.Abs(original)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "ratchet-workspace-")
	if err != nil {
		return nil, err
	}
	s := &Start{Original: original, Copy: filepath.Join(root, "work"), Base: filepath.Join(root, "start"), Git: isGit(original)}
	if err := s.begin(ctx); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

func (s *Start) begin(ctx context.Context) error {
	if err := os.CopyFS(s.Copy, os.DirFS(s.Original)); err != nil {
		return err
	}
	if s.Git {
		// The start is the copy as it was made, which is the original
		// unless it changed while being copied: then the fingerprint
		// refuses the patch, as it should.
		g, err := newGit(ctx, s.Base, s.Original)
		if err != nil {
			return err
		}
		if s.Tree, err = g.tree(ctx, s.Copy); err != nil {
			return err
		}
		s.Fingerprint = "git-tree:" + s.Tree
		return nil
	}
	if err := os.CopyFS(s.Base, os.DirFS(s.Copy)); err != nil {
		return err
	}
	sum, err := hashTree(s.Base)
	if err != nil {
		return err
	}
	s.Fingerprint = "sha256:" + sum
	return nil
}

// Dir is the directory Begin or BeginLayer made, holding the copy and the
// start (or the layer): End removes it.
func (s *Start) Dir() string {
	if s.Layer != nil {
		return filepath.Dir(s.Layer.Dir)
	}
	return filepath.Dir(s.Copy)
}

// End releases the workspace once the run is over: a layer's view is
// unmounted, and unless keep everything is removed (a kept layer's
// changes stay in its upper layer).
func (s *Start) End(keep bool) error {
	if s.Layer != nil {
		if err := s.Layer.Unmount(); err != nil {
			return err // never remove through a live view
		}
	}
	if keep {
		return nil
	}
	return os.RemoveAll(s.Dir())
}

// isGit says whether dir is the root of a git work tree that the git
// command can diff.
func isGit(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return false
	}
	_, err := exec.LookPath("git")
	return err == nil
}

// Take diffs the copy against its start. A failure to diff is not an
// error of the run: the Patch's Problem says what went wrong.
func Take(ctx context.Context, s Start) loop.Patch {
	p := loop.Patch{Git: s.Git, Original: s.Original, Fingerprint: s.Fingerprint, Copy: s.Copy}
	var (
		d   diff
		err error
	)
	switch {
	case s.Layer != nil:
		// The view is gone once the run ends; the upper layer holds the
		// changed files at their paths.
		p.Copy = s.Layer.Upper()
		d, err = layerDiff(ctx, s.Layer, s.Git)
	case s.Git:
		d, err = gitDiff(ctx, s)
	default:
		d, err = treeDiff(s.Base, s.Copy)
	}
	switch {
	case err != nil:
		p.Problem = "the workspace could not be diffed: " + err.Error()
	case len(d.text) > MaxDiff:
		p.Problem = fmt.Sprintf("the diff is %d MiB, more than the %d MiB kept; the changes are in the copy %s", len(d.text)>>20, MaxDiff>>20, p.Copy)
		p.Files, p.Binary = d.files, d.binary
	default:
		p.Diff, p.Files, p.Binary = d.text, d.files, d.binary
	}
	return p
}

// diff is a diff and the paths it touches.
type diff struct {
	text          string
	files, binary []string
}

// Fingerprint is the state of workspace dir as Begin records it: for a git
// workspace the hash of the tree git would commit from it (what .gitignore
// leaves out does not count), otherwise a hash of every file's path, kind,
// mode and content. The bytecode caches that running tests leaves behind
// never count (see skipDir).
func Fingerprint(ctx context.Context, dir string, git bool) (string, error) {
	if git {
		tmp, err := os.MkdirTemp("", "ratchet-fingerprint-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		g, err := newGit(ctx, tmp, dir)
		if err != nil {
			return "", err
		}
		tree, err := g.tree(ctx, dir)
		if err != nil {
			return "", err
		}
		return "git-tree:" + tree, nil
	}
	sum, err := hashTree(dir)
	if err != nil {
		return "", err
	}
	return "sha256:" + sum, nil
}

// ErrChanged is wrapped by Apply's error when the original workspace is no
// longer as it was when the run started.
var ErrChanged = errors.New("the workspace changed since the run started")

// Apply applies p to its original workspace, all or nothing. It refuses a
// patch that is incomplete (a Problem, binary files named without their
// content, redacted secrets) and an original whose fingerprint is no
// longer the start's, wrapping ErrChanged. It uses git apply, or patch
// where git is not installed.
func Apply(ctx context.Context, p loop.Patch) error {
	if err := applicable(p); err != nil {
		return err
	}
	if p.Diff == "" {
		return nil // nothing changed
	}
	now, err := fingerprintLike(ctx, p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.Original, err)
	}
	_, gitErr := exec.LookPath("git")
	if now != p.Fingerprint {
		hint := "the patch was taken against its state then; apply it by hand with git apply or patch -p1 from 'ratchet show RUN --patch'"
		if gitErr == nil && gitApply(ctx, p.Original, p.Diff, "--reverse", "--check") == nil {
			hint = "it looks applied already: the patch's reverse applies cleanly"
		}
		return fmt.Errorf("%s: %w (%s)", p.Original, ErrChanged, hint)
	}
	return applyIn(ctx, p.Original, p.Diff)
}

// ApplyCopy rebuilds in dir (which must not exist) the workspace as p's run
// left it: a copy of p.Original, which must still be as it was when the run
// began, with p applied. eval rescore judges an agent's workspace on it.
func ApplyCopy(ctx context.Context, p loop.Patch, dir string) error {
	if err := unchanged(ctx, p); err != nil {
		return err
	}
	if err := os.CopyFS(dir, os.DirFS(p.Original)); err != nil {
		return fmt.Errorf("copying %s: %w", p.Original, err)
	}
	if p.Diff == "" {
		return nil
	}
	return applyIn(ctx, dir, p.Diff)
}

// ApplyLayer is ApplyCopy on a fresh layer over p.Original (BeginLayer)
// that copies nothing: the view at the Start's Copy is the workspace as p's
// run left it, p's changes alone in its upper layer, the original
// untouched. It wraps layer.ErrUnsupported where no layer can be mounted
// (then ApplyCopy serves). The caller Ends the Start.
func ApplyLayer(ctx context.Context, p loop.Patch) (*Start, error) {
	if err := unchanged(ctx, p); err != nil {
		return nil, err
	}
	s, err := BeginLayer(ctx, p.Original, 0, 0)
	if err != nil {
		return nil, err
	}
	if p.Diff != "" {
		if err := applyIn(ctx, s.Copy, p.Diff); err != nil {
			s.End(false)
			return nil, err
		}
	}
	return s, nil
}

// unchanged says whether p applies to p.Original, which must be as it was
// when p's run began.
func unchanged(ctx context.Context, p loop.Patch) error {
	if err := applicable(p); err != nil {
		return err
	}
	now, err := fingerprintLike(ctx, p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.Original, err)
	}
	if now != p.Fingerprint {
		return fmt.Errorf("%s: %w (the run's changes were taken against its state then)", p.Original, ErrChanged)
	}
	return nil
}

// fingerprintLike fingerprints p.Original the way p's start was.
func fingerprintLike(ctx context.Context, p loop.Patch) (string, error) {
	if strings.HasPrefix(p.Fingerprint, "stat:") { // a layer's start
		return statFingerprint(p.Original)
	}
	return Fingerprint(ctx, p.Original, strings.HasPrefix(p.Fingerprint, "git-tree:"))
}

// applyIn applies diff to the files of dir, with git where there is one.
func applyIn(ctx context.Context, dir, diff string) error {
	if _, err := exec.LookPath("git"); err == nil {
		return gitApply(ctx, dir, diff)
	}
	return patchApply(ctx, dir, diff)
}

// applicable says why p cannot be applied anywhere, or nil.
func applicable(p loop.Patch) error {
	var why []string
	if p.Problem != "" {
		why = append(why, p.Problem)
	}
	if len(p.Binary) > 0 {
		why = append(why, "the patch names binary files without their content: "+strings.Join(p.Binary, ", ")+" (copy them from "+p.Copy+")")
	}
	if p.Redacted {
		why = append(why, "secrets in the diff were redacted, so it would write the redaction marks (copy the files from "+p.Copy+")")
	}
	if p.Original == "" || p.Fingerprint == "" {
		why = append(why, "the patch does not say which workspace it applies to")
	}
	if len(why) > 0 {
		return fmt.Errorf("cannot apply the patch: %s", strings.Join(why, "; "))
	}
	return nil
}

// patchApply applies diff in dir with patch -p1, after a dry run, so that
// a diff that does not apply changes nothing.
func patchApply(ctx context.Context, dir, diff string) error {
	for _, args := range [][]string{{"--dry-run"}, nil} {
		cmd := exec.CommandContext(ctx, "patch", append([]string{"-p1", "--batch", "--forward", "--no-backup-if-mismatch", "--silent"}, args...)...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(diff)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("patch -p1: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// skipDir says which directories a tree diff and a fingerprint leave out:
// a nested git directory, and the bytecode caches that running Python's
// tests writes (never part of a change, and binary).
func skipDir(name string) bool {
	return name == ".git" || name == "__pycache__" || name == ".pytest_cache"
}

// hashTree hashes every entry below dir but what skipDir leaves out, in
// path order.
func hashTree(dir string) (string, error) {
	entries, err := walk(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries {
		// git's modes, not the permission bits, which a copy made under
		// another umask does not keep.
		fmt.Fprintf(h, "%q %s %d\n", e.rel, gitMode(e.mode), len(e.data))
		h.Write(e.data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// entry is one file of a tree: a regular file's content or a link's
// target.
type entry struct {
	rel  string
	mode fs.FileMode // type bits and permissions
	data []byte
}

// walk lists dir's files and links, sorted by path.
func walk(dir string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{rel: filepath.ToSlash(rel), mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.data = []byte(target)
		case info.Mode().IsRegular():
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil // devices, FIFOs, sockets: no content to carry
		}
		out = append(out, e)
		return nil
	})
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	return out, err
}
