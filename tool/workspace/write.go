package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/tool"
)

// maxEditBytes bounds the size of a file edit_file will load.
const maxEditBytes = 16 << 20

const writeDescription = `Create a file in the workspace, or replace all of its content, creating missing parent directories. Prefer edit_file to change part of an existing file.`

const editDescription = `Replace one exact occurrence of old_text with new_text in a file in the workspace. old_text must match the file exactly, including whitespace, indentation and line breaks, and must occur exactly once: include enough surrounding lines to make it unique. Use write_file to create a file.`

const appendDescription = `Append text to the end of a file in the workspace, creating the file (but not its directories) if it does not exist. The text is added as is: end it with a newline to add whole lines.`

type appendArgs struct {
	Path string `json:"path" jsonschema:"the file to append to, relative to the workspace root, such as \"log.txt\""`
	Text string `json:"text" jsonschema:"the text to add at the end of the file"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the workspace root, such as \"src/main.go\""`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

type editArgs struct {
	Path    string `json:"path" jsonschema:"the file to edit, relative to the workspace root, such as \"src/main.go\""`
	OldText string `json:"old_text" jsonschema:"the exact text to replace; it must occur exactly once in the file"`
	NewText string `json:"new_text" jsonschema:"the text to put in its place; empty to delete old_text"`
}

// cleanFile is clean for a path that must name a file, not the root;
// example is a file name to suggest.
func cleanFile(path, example string) (string, error) {
	p, err := clean(path)
	if err == nil && p == "." {
		err = fmt.Errorf(`%w: path %q is the workspace root; give the path of a file, such as %q`, tool.ErrInvalidArgs, path, example)
	}
	return p, err
}

func (ws *Workspace) writeFile(ctx context.Context, in writeArgs) (string, error) {
	p, err := cleanFile(in.Path, "notes.txt")
	if err != nil {
		return "", err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	info, err := ws.root.Stat(osPath(p))
	switch {
	case err == nil && info.IsDir():
		return "", fmt.Errorf("%q is a directory; give the path of a file", in.Path)
	case escapes(err):
		return "", fail(in.Path, err)
	}
	if dir := path.Dir(p); dir != "." {
		if err := ws.root.MkdirAll(osPath(dir), 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				// A file stands where a parent directory should be.
				err = &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
			}
			return "", fail(in.Path, err)
		}
	}
	if err := ws.root.WriteFile(osPath(p), []byte(in.Content), 0o644); err != nil {
		return "", fail(in.Path, err)
	}
	return fmt.Sprintf("wrote %s to %s", words.Count(len(in.Content), "byte"), p), nil
}

func (ws *Workspace) editFile(ctx context.Context, in editArgs) (string, error) {
	p, err := clean(in.Path)
	if err != nil {
		return "", err
	}
	switch {
	case in.OldText == "":
		return "", fmt.Errorf("%w: old_text is empty; give the exact text to replace, or call write_file to replace the whole file", tool.ErrInvalidArgs)
	case in.OldText == in.NewText:
		return "", fmt.Errorf("%w: old_text and new_text are the same, so the edit would change nothing", tool.ErrInvalidArgs)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	text, err := ws.load(in.Path, p)
	if err != nil {
		return "", err
	}

	at := occurrences(text, in.OldText)
	switch len(at) {
	case 0:
		return "", notFound(in.Path, text, in.OldText)
	case 1:
	default:
		return "", fmt.Errorf("old_text occurs %d times in %q (at lines %s), but it must occur exactly once; add surrounding lines to old_text so that it matches only the place to change",
			len(at), in.Path, lineList(text, at))
	}
	i := at[0]
	edited := text[:i] + in.NewText + text[i+len(in.OldText):]
	if err := ws.root.WriteFile(osPath(p), []byte(edited), 0o644); err != nil {
		return "", fail(in.Path, err)
	}
	return fmt.Sprintf("edited %s at line %d", p, lineAt(text, i)), nil
}

// load reads a text file for edit_file; arg is the path as the model gave
// it and p the cleaned path.
func (ws *Workspace) load(arg, p string) (string, error) {
	f, err := ws.root.Open(osPath(p))
	if err != nil {
		if !escapes(err) && errors.Is(err, fs.ErrNotExist) {
			return "", &pathError{msg: fmt.Sprintf("%q does not exist; call write_file to create it, or list_files to see which files exist", arg), err: err}
		}
		return "", fail(arg, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fail(arg, err)
	}
	switch {
	case info.IsDir():
		return "", fmt.Errorf("%q is a directory, not a file", arg)
	case info.Size() > maxEditBytes:
		return "", fmt.Errorf("%q is too large to edit (%d bytes; edit_file handles up to %d)", arg, info.Size(), maxEditBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return "", fail(arg, err)
	}
	if bytes.IndexByte(b[:min(len(b), sniffLen)], 0) >= 0 {
		return "", fmt.Errorf("%q is a binary file (it contains NUL bytes), and edit_file changes only text files", arg)
	}
	return string(b), nil
}

// occurrences returns where sub starts in s, overlapping occurrences
// included: in "aaa", "aa" occurs twice and is ambiguous.
func occurrences(s, sub string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + 1
	}
}

// lineAt returns the 1-based line number of byte offset i of s.
func lineAt(s string, i int) int { return 1 + strings.Count(s[:i], "\n") }

// lineList names the lines of up to ten offsets, such as "3, 9 and 14".
func lineList(s string, at []int) string {
	const most = 10
	var lines []string
	for k, i := range at {
		if k == most {
			break
		}
		lines = append(lines, fmt.Sprint(lineAt(s, i)))
	}
	if len(at) > most {
		return strings.Join(lines, ", ") + ", …"
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
}

// notFound explains that old was not found in text, with a hint when a
// near match suggests what went wrong.
func notFound(arg, text, old string) error {
	msg := fmt.Sprintf("old_text was not found in %q. It must match the file exactly, including whitespace, indentation and line breaks; call read_file to see the current text and copy it exactly", arg)
	switch {
	case strings.Contains(old, "\n") && !strings.Contains(old, "\r\n") &&
		strings.Contains(text, strings.ReplaceAll(old, "\n", "\r\n")):
		msg += `. The file has Windows line endings: each line break in old_text must be "\r\n"`
	case strings.Contains(squeeze(text), squeeze(old)) && strings.TrimSpace(old) != "":
		msg += ". A match exists if whitespace is ignored, so check the indentation (tabs or spaces), trailing spaces and blank lines"
	}
	return fmt.Errorf("%s", msg)
}

// squeeze replaces every run of whitespace in s by one space and trims it.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

func (ws *Workspace) appendFile(ctx context.Context, in appendArgs) (string, error) {
	p, err := cleanFile(in.Path, "log.txt")
	if err != nil {
		return "", err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f, err := ws.root.OpenFile(osPath(p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return "", fail(in.Path, err)
	}
	_, werr := io.WriteString(f, in.Text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fail(in.Path, werr)
	}
	return fmt.Sprintf("appended %s to %s", words.Count(len(in.Text), "byte"), p), nil
}
