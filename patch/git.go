package patch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// gitRepo runs git with a private git directory of ours and a work tree
// given per call. No configuration but the command line's is read (not the
// system's, the user's or the work tree's: the copy's .git is the agent's
// to write), and nothing a configuration could start (fsmonitor, hooks,
// external diff drivers, text conversion) runs.
type gitRepo struct{ dir string }

// newGit makes dir a bare git directory whose exclude file is the one of
// the git workspace like (so that what the user's repository ignores is
// ignored here too).
func newGit(ctx context.Context, dir, like string) (gitRepo, error) {
	g := gitRepo{dir: dir}
	if _, err := g.run(ctx, "", nil, "init", "--quiet", "--bare", "--template=", dir); err != nil {
		return g, err
	}
	if exclude, err := os.ReadFile(filepath.Join(like, ".git", "info", "exclude")); err == nil {
		if err := os.MkdirAll(filepath.Join(dir, "info"), 0o700); err != nil {
			return g, err
		}
		if err := os.WriteFile(filepath.Join(dir, "info", "exclude"), exclude, 0o600); err != nil {
			return g, err
		}
	}
	return g, nil
}

// run runs git args with work tree (none when "") and extra environment.
func (g gitRepo) run(ctx context.Context, work string, env []string, args ...string) ([]byte, error) {
	return g.runInput(ctx, nil, work, env, args...)
}

// runInput is run with stdin read from in.
func (g gitRepo) runInput(ctx context.Context, in io.Reader, work string, env []string, args ...string) ([]byte, error) {
	cmd, stdout, stderr := g.command(ctx, in, work, env, args...)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// command is the git command run and runInput run.
func (g gitRepo) command(ctx context.Context, in io.Reader, work string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	argv := append([]string{
		"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.autocrlf=false",
		"-c", "core.quotePath=true", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_DIR=" + g.dir, "HOME=" + g.dir, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0",
	}, env...)
	if work != "" {
		cmd.Env = append(cmd.Env, "GIT_WORK_TREE="+work)
		cmd.Dir = work
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &stdout, &stderr
	return cmd, &stdout, &stderr
}

// ignored returns which of paths the .gitignore files of work tree work
// (and the exclude file g was made with) leave out. git check-ignore
// exits 1 when none is.
func (g gitRepo) ignored(ctx context.Context, work string, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	cmd, stdout, stderr := g.command(ctx, strings.NewReader(strings.Join(paths, "\x00")+"\x00"), work, nil, "check-ignore", "--stdin", "-z", "--no-index")
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return nil, fmt.Errorf("git check-ignore: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for p := range bytes.SplitSeq(stdout.Bytes(), []byte{0}) {
		if len(p) > 0 {
			out[string(p)] = true
		}
	}
	return out, nil
}

// tree writes the tree git would commit from work tree work (every file
// .gitignore does not leave out) into g and returns its hash. The index is
// a fresh one each time, so nothing is staged in between.
func (g gitRepo) tree(ctx context.Context, work string) (string, error) {
	index, err := os.CreateTemp(g.dir, "index-")
	if err != nil {
		return "", err
	}
	index.Close()
	os.Remove(index.Name()) // git wants to create it
	defer os.Remove(index.Name())
	env := []string{"GIT_INDEX_FILE=" + index.Name()}
	if _, err := g.run(ctx, work, env, "add", "--all", "."); err != nil {
		return "", err
	}
	out, err := g.run(ctx, work, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// gitDiff diffs the copy of s against its start tree.
func gitDiff(ctx context.Context, s Start) (diff, error) {
	g := gitRepo{dir: s.Base}
	end, err := g.tree(ctx, s.Copy)
	if err != nil {
		return diff{}, err
	}
	common := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--full-index"}
	text, err := g.run(ctx, "", nil, append(common, s.Tree, end)...)
	if err != nil {
		return diff{}, err
	}
	numstat, err := g.run(ctx, "", nil, append(common, "--numstat", "-z", s.Tree, end)...)
	if err != nil {
		return diff{}, err
	}
	d := diff{text: string(text)}
	d.files, d.binary = parseNumstat(numstat)
	return d, nil
}

// parseNumstat reads git diff --numstat -z (without renames): for each
// file "ADDED\tDELETED\tPATH\x00", with "-" counts for a binary file. The
// paths are the agent's to choose; anything malformed is skipped.
func parseNumstat(out []byte) (files, binary []string) {
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		fields := strings.SplitN(string(rec), "\t", 3)
		if len(fields) != 3 || fields[2] == "" {
			continue
		}
		files = append(files, fields[2])
		if fields[0] == "-" && fields[1] == "-" {
			binary = append(binary, fields[2])
		}
	}
	slices.Sort(files)
	slices.Sort(binary)
	return files, binary
}

// gitApply applies diff to the files of dir (flags such as --check
// added), which need not be a git work
// tree: a private git directory stands in for its repository, so that the
// paths are taken from dir (not from a repository dir may lie inside) and
// no index is touched. git apply checks every hunk before it changes
// anything.
func gitApply(ctx context.Context, dir, diff string, flags ...string) error {
	tmp, err := os.MkdirTemp("", "ratchet-apply-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	g, err := newGit(ctx, tmp, dir)
	if err != nil {
		return err
	}
	args := append([]string{"apply", "--whitespace=nowarn", "-p1"}, flags...)
	_, err = g.runInput(ctx, strings.NewReader(diff), dir, nil, append(args, "-")...)
	return err
}
