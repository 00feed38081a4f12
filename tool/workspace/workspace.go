// Package workspace provides file tools confined to one directory, for
// agents that edit a small project: list_files, read_file, write_file,
// edit_file, append_file, and grep and glob, which search it as git sees
// it (what .gitignore ignores is left out).
//
// Confinement rests on [os.Root]: every path is resolved by the operating
// system relative to the workspace directory, and a path that would leave it
// (through "..", as an absolute path, or through a symbolic link pointing
// outside) is refused. Paths given by the model are also checked lexically
// first, so that the refusal it sees explains what was wrong.
//
// Paths are relative to the workspace root and use forward slashes, such as
// "src/main.go". Outputs name files the same way, so a path from list_files
// can be passed to the other tools as is.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/ratchetloop/ratchet/tool"
)

// Tool names, in the order [Workspace.Tools] returns them.
const (
	ListFiles  = "list_files"
	ReadFile   = "read_file"
	WriteFile  = "write_file"
	EditFile   = "edit_file"
	AppendFile = "append_file"
	Grep       = "grep"
	Glob       = "glob"
)

// ErrOutside is matched (with [errors.Is]) by the error a tool returns for a
// path outside the workspace.
var ErrOutside = errors.New("path is outside the workspace")

// Workspace is a directory that tools may read and change. It is safe for
// concurrent use.
type Workspace struct {
	root  *os.Root
	tools []tool.Tool
	// mu serialises write_file and edit_file, so that two edits of one file
	// in the same batch of calls cannot lose one another.
	mu sync.Mutex
}

// New opens dir as a workspace. The directory must exist. Close the
// workspace when its tools are no longer used.
func New(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("workspace: directory is empty")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	ws := &Workspace{root: root}
	ws.tools = []tool.Tool{
		// Both tools bound their own output; the executor cuts it only
		// where a task file sets tighter caps, and the hints say what to do.
		tool.Func(ListFiles, listDescription, ws.listFiles,
			tool.Idempotent(), tool.MaxOutput(listMaxBytes, maxEntriesCap+2),
			tool.MoreHint("list a subdirectory, or pass a smaller max_entries, to see them")),
		tool.Func(ReadFile, readDescription, ws.readFile,
			tool.Idempotent(), tool.MaxOutput(readMaxBytes, maxLinesCap+2),
			tool.MoreHint("to see them, call read_file again with a smaller max_lines and offset_line set to the line after the last one shown")),
		tool.Func(WriteFile, writeDescription, ws.writeFile,
			tool.Idempotent()),
		// Not idempotent: once applied, the same edit finds no old_text, or
		// applies again where new_text contains old_text.
		tool.Func(EditFile, editDescription, ws.editFile),
		// Not idempotent: each call adds its text again.
		tool.Func(AppendFile, appendDescription, ws.appendFile),
		tool.Func(Grep, grepDescription, ws.grep,
			tool.Idempotent(), tool.MaxOutput(searchMaxBytes, searchMaxBytes),
			tool.MoreHint("narrow pattern, path or glob to see them")),
		tool.Func(Glob, globDescription, ws.glob,
			tool.Idempotent(), tool.MaxOutput(searchMaxBytes, maxResultsCap+2),
			tool.MoreHint("narrow the pattern or path to see them")),
	}
	return ws, nil
}

// Close closes the workspace directory. Tools called afterwards fail.
func (ws *Workspace) Close() error { return ws.root.Close() }

// Tools returns list_files, read_file, write_file, edit_file,
// append_file, grep and glob, in that order. The caller may modify the returned slice.
func (ws *Workspace) Tools() []tool.Tool { return slices.Clone(ws.tools) }

// Lookup returns the workspace tools with the given names, in the given
// order. It fails, naming the available tools, if a name is unknown.
func Lookup(ws *Workspace, names []string) ([]tool.Tool, error) {
	all := ws.Tools()
	available := make([]string, len(all))
	byName := make(map[string]tool.Tool, len(all))
	for i, t := range all {
		name := t.Info().Name
		available[i] = name
		byName[name] = t
	}
	tools := make([]tool.Tool, 0, len(names))
	var unknown []string
	for _, name := range names {
		t, ok := byName[name]
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", name))
			continue
		}
		tools = append(tools, t)
	}
	if len(unknown) > 0 {
		noun := "tool"
		if len(unknown) > 1 {
			noun = "tools"
		}
		return nil, fmt.Errorf("workspace: unknown %s %s; available tools: %s",
			noun, strings.Join(unknown, ", "), strings.Join(available, ", "))
	}
	return tools, nil
}

// clean checks a path given by the model and returns it cleaned, with
// forward slashes; "." is the workspace root. It refuses, before the file
// system is touched, the paths that are outside the workspace whatever it
// holds.
func clean(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf(`%w: path is empty; give a path relative to the workspace root, such as "src/main.go"`, tool.ErrInvalidArgs)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: path %q contains a NUL byte", tool.ErrInvalidArgs, p)
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", &outsideError{path: p, why: "absolute paths are not allowed"}
	case strings.Contains(p, `\`):
		return "", fmt.Errorf(`%w: path %q contains a backslash; separate directories with forward slashes, such as "src/main.go"`, tool.ErrInvalidArgs, p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &outsideError{path: p, why: `".." leads above the workspace root`}
	}
	return c, nil
}

// osPath turns a cleaned path into one for the methods of os.Root.
func osPath(p string) string { return filepath.FromSlash(p) }

// outsideError reports a path outside the workspace.
type outsideError struct {
	path string
	why  string
	err  error // from os.Root, if it refused the path
}

func (e *outsideError) Error() string {
	return fmt.Sprintf(`path %q is outside the workspace: %s. Only files inside the workspace can be used; give a path relative to the workspace root, such as "src/main.go"`, e.path, e.why)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutside }
func (e *outsideError) Unwrap() error        { return e.err }

// pathError is an error about a path, worded for the model. It wraps the
// error from the file system, so that errors.Is still works.
type pathError struct {
	msg string
	err error
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.err }

// escapes reports whether err is os.Root refusing a path that leaves the
// root. The os package does not export that error, so it is recognised by
// its text; the tests check that it still is.
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

// fail explains err, returned by the file system for path p (as the model
// gave it), in words the model can act on.
func fail(p string, err error) error {
	var msg string
	switch {
	case escapes(err):
		// clean has refused "..", absolute paths and the like, so os.Root
		// must have met a symbolic link.
		return &outsideError{path: p, why: "it goes through a symbolic link that points outside the workspace", err: err}
	case errors.Is(err, fs.ErrNotExist):
		msg = fmt.Sprintf("%q does not exist; call list_files to see which files exist", p)
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("permission denied for %q", p)
	case errors.Is(err, syscall.ENOTDIR):
		msg = fmt.Sprintf("%q cannot be used: part of it is a file, not a directory", p)
	case errors.Is(err, fs.ErrClosed):
		msg = "the workspace is closed; its files can no longer be used"
	default:
		// The path and the system call's name would be noise.
		msg = fmt.Sprintf("%q: %v", p, unwrapPath(err))
	}
	return &pathError{msg: msg, err: err}
}

// plural returns "1 line", "2 lines" and the like.
