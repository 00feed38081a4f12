package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/workspace"
)

// open returns a workspace on a new directory holding files (path to
// content; a path ending in "/" is an empty directory).
func open(t *testing.T, files map[string]string) (*workspace.Workspace, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	populate(t, dir, files)
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := ws.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ws, dir
}

func populate(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink makes a symbolic link or skips the test where it cannot.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
}

// run calls the named tool of ws with args encoded as JSON.
func run(t *testing.T, ws *workspace.Workspace, name string, args any) (string, error) {
	t.Helper()
	tools, err := workspace.Lookup(ws, []string{name})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tools[0].Run(context.Background(), raw)
}

// snapshot records every file, directory and link under dir, without
// following links.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			got[rel+"/"] = ""
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			got[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkErr checks err against want, a substring of the message; "" wants
// no error.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error = %v; want none", err)
	case want != "" && err == nil:
		t.Errorf("error = nil; want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error = %q; want it to contain %q", err, want)
	}
}

func TestTools(t *testing.T) {
	ws, _ := open(t, nil)
	type summary struct {
		Name       string
		Idempotent bool
		Properties []string
		Required   []string
	}
	var got []summary
	for _, tl := range ws.Tools() {
		info := tl.Info()
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(info.Schema, &schema); err != nil {
			t.Fatalf("%s: schema: %v", info.Name, err)
		}
		// Property order from a map is random; required order is not.
		props := slices.Sorted(maps.Keys(schema.Properties))
		got = append(got, summary{info.Name, info.Idempotent, props, schema.Required})
	}
	want := []summary{
		{"list_files", true, []string{"max_entries", "path"}, nil},
		{"read_file", true, []string{"max_lines", "offset_line", "path"}, []string{"path"}},
		{"write_file", true, []string{"content", "path"}, []string{"path", "content"}},
		{"edit_file", false, []string{"new_text", "old_text", "path"}, []string{"path", "old_text", "new_text"}},
		{"append_file", false, []string{"path", "text"}, []string{"path", "text"}},
		{"grep", true, []string{"context", "glob", "ignore_case", "max_results", "path", "pattern"}, []string{"pattern"}},
		{"glob", true, []string{"max_results", "path", "pattern"}, []string{"pattern"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(ws.Tools()...); err != nil {
		t.Errorf("NewRegistry rejected the workspace tools: %v", err)
	}
}

func TestLookup(t *testing.T) {
	ws, _ := open(t, nil)
	tests := []struct {
		names   []string
		want    []string
		wantErr string
	}{
		{names: nil, want: []string{}},
		{names: []string{"edit_file", "read_file"}, want: []string{"edit_file", "read_file"}},
		{names: []string{"read_file", "rm"}, wantErr: `workspace: unknown tool "rm"; available tools: list_files, read_file, write_file, edit_file, append_file`},
		{names: []string{"rm", "cat"}, wantErr: `unknown tools "rm", "cat"; available tools:`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.names), func(t *testing.T) {
			tools, err := workspace.Lookup(ws, tt.names)
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			got := []string{}
			for _, tl := range tools {
				got = append(got, tl.Info().Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir, map[string]string{"file": "x"})
	for _, bad := range []string{"", filepath.Join(dir, "missing"), filepath.Join(dir, "file")} {
		if ws, err := workspace.New(bad); err == nil {
			ws.Close()
			t.Errorf("New(%q) succeeded; want an error", bad)
		}
	}

	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, ws, "read_file", map[string]any{"path": "file"})
	checkErr(t, err, "the workspace is closed")
}

func TestListFiles(t *testing.T) {
	ws, _ := open(t, map[string]string{
		"a.txt":         "hello",
		"b.txt":         "x",
		"empty/":        "",
		"src/main.go":   "package main\n",
		"src/util/x.go": "",
		".git/HEAD":     "ref: refs/heads/main\n",
		"src/.git/x":    "nested repositories are skipped too",
	})
	const more = ", or with a larger max_entries (at most 1000)"
	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "whole workspace", args: map[string]any{}, want: "a.txt (5 bytes)\nb.txt (1 byte)\nempty/\nsrc/\nsrc/main.go (13 bytes)\nsrc/util/\nsrc/util/x.go (0 bytes)"},
		{name: "dot", args: map[string]any{"path": "."}, want: "a.txt (5 bytes)\nb.txt (1 byte)\nempty/\nsrc/\nsrc/main.go (13 bytes)\nsrc/util/\nsrc/util/x.go (0 bytes)"},
		{name: "subdirectory", args: map[string]any{"path": "src"}, want: "src/main.go (13 bytes)\nsrc/util/\nsrc/util/x.go (0 bytes)"},
		{name: "unclean path", args: map[string]any{"path": "./src/util/../"}, want: "src/main.go (13 bytes)\nsrc/util/\nsrc/util/x.go (0 bytes)"},
		{name: "bounded", args: map[string]any{"max_entries": 3}, want: "a.txt (5 bytes)\nb.txt (1 byte)\nempty/\n… 4 more entries omitted: call list_files with a subdirectory as path" + more},
		{name: "bounded to one", args: map[string]any{"path": "src", "max_entries": 2}, want: "src/main.go (13 bytes)\nsrc/util/\n… 1 more entry omitted: call list_files with a subdirectory as path" + more},
		{name: "exactly enough", args: map[string]any{"path": "src", "max_entries": 3}, want: "src/main.go (13 bytes)\nsrc/util/\nsrc/util/x.go (0 bytes)"},
		{name: "empty directory", args: map[string]any{"path": "empty"}, want: "empty/ is an empty directory"},
		{name: "file", args: map[string]any{"path": "a.txt"}, want: "a.txt (5 bytes)"},
		{name: "missing", args: map[string]any{"path": "nope"}, wantErr: `"nope" does not exist; call list_files`},
		{name: "negative bound", args: map[string]any{"max_entries": -1}, wantErr: "max_entries must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, ws, "list_files", tt.args)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListFilesDefaultBound(t *testing.T) {
	files := map[string]string{}
	for i := range 250 {
		files[fmt.Sprintf("f%03d", i)] = ""
	}
	ws, _ := open(t, files)
	tests := []struct {
		maxEntries int
		wantLines  int
		wantLast   string
	}{
		{0, 200, "… 50 more entries omitted: call list_files with a subdirectory as path, or with a larger max_entries (at most 1000)"},
		{249, 249, "… 1 more entry omitted: call list_files with a subdirectory as path, or with a larger max_entries (at most 1000)"},
		{250, 250, "f249 (0 bytes)"},
		{5000, 250, "f249 (0 bytes)"}, // capped at 1000
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.maxEntries), func(t *testing.T) {
			out, err := run(t, ws, "list_files", map[string]any{"max_entries": tt.maxEntries})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out, "\n")
			entries := len(lines)
			if strings.HasPrefix(lines[len(lines)-1], "…") {
				entries--
			}
			if entries != tt.wantLines {
				t.Errorf("%d entries listed; want %d", entries, tt.wantLines)
			}
			if got := lines[len(lines)-1]; got != tt.wantLast {
				t.Errorf("last line = %q; want %q", got, tt.wantLast)
			}
		})
	}
}

func TestListFilesSymlink(t *testing.T) {
	ws, dir := open(t, map[string]string{"a.txt": "a"})
	symlink(t, "a.txt", filepath.Join(dir, "b.txt"))
	got, err := run(t, ws, "list_files", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	want := "a.txt (1 byte)\nb.txt -> a.txt (symbolic link)"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// numbered returns lines "line from" to "line to", each ended by "\n".
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	ws, _ := open(t, map[string]string{
		"long.txt":   numbered(1, 1000),
		"short.txt":  "one\ntwo\nthree", // no final newline
		"blank.txt":  "a\n\n",
		"empty.txt":  "",
		"dir/x.txt":  "x\n",
		"utf8.txt":   strings.Repeat("é", 1500) + "\n", // 3000 bytes
		"crlf.txt":   "a\r\nb\r\n",
		"nested.txt": "",
	})
	page := func(path string, from, to, total int) string {
		s := fmt.Sprintf("%s (lines %d–%d of %d)\n", path, from, to, total) + numbered(from, to)
		if to < total {
			noun := "lines"
			if total-to == 1 {
				noun = "line"
			}
			return s + fmt.Sprintf("… %d more %s: call read_file with offset_line=%d", total-to, noun, to+1)
		}
		return strings.TrimSuffix(s, "\n")
	}
	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "whole file", args: map[string]any{"path": "short.txt"}, want: "short.txt (lines 1–3 of 3)\none\ntwo\nthree"},
		{name: "trailing blank line", args: map[string]any{"path": "blank.txt"}, want: "blank.txt (lines 1–2 of 2)\na\n"},
		{name: "line endings kept", args: map[string]any{"path": "crlf.txt"}, want: "crlf.txt (lines 1–2 of 2)\na\r\nb\r"},
		{name: "one line", args: map[string]any{"path": "short.txt", "offset_line": 2, "max_lines": 1}, want: "short.txt (lines 2–2 of 3)\ntwo\n… 1 more line: call read_file with offset_line=3"},
		{name: "first page", args: map[string]any{"path": "long.txt"}, want: page("long.txt", 1, 400, 1000)},
		{name: "second page", args: map[string]any{"path": "long.txt", "offset_line": 401}, want: page("long.txt", 401, 800, 1000)},
		{name: "last page", args: map[string]any{"path": "long.txt", "offset_line": 801}, want: page("long.txt", 801, 1000, 1000)},
		{name: "small page", args: map[string]any{"path": "long.txt", "offset_line": 10, "max_lines": 5}, want: page("long.txt", 10, 14, 1000)},
		{name: "last line", args: map[string]any{"path": "long.txt", "offset_line": 1000}, want: page("long.txt", 1000, 1000, 1000)},
		{name: "max_lines capped", args: map[string]any{"path": "long.txt", "max_lines": 5000}, want: page("long.txt", 1, 1000, 1000)},
		{name: "unclean path", args: map[string]any{"path": "./dir/../short.txt", "max_lines": 1}, want: "short.txt (lines 1–1 of 3)\none\n… 2 more lines: call read_file with offset_line=2"},
		{name: "empty file", args: map[string]any{"path": "empty.txt"}, want: "empty.txt (empty file)"},
		{name: "long line cut at a rune", args: map[string]any{"path": "utf8.txt"}, want: "utf8.txt (lines 1–1 of 1)\n" + strings.Repeat("é", 1000) + " [… line cut: 1000 more bytes]"},
		{name: "past the end", args: map[string]any{"path": "short.txt", "offset_line": 4}, wantErr: `offset_line=4 is past the end of "short.txt", which has 3 lines; pass an offset_line from 1 to 3`},
		{name: "negative offset", args: map[string]any{"path": "short.txt", "offset_line": -1}, wantErr: "offset_line must be 1 or more"},
		{name: "negative max_lines", args: map[string]any{"path": "short.txt", "max_lines": -1}, wantErr: "max_lines must be 1 or more"},
		{name: "directory", args: map[string]any{"path": "dir"}, wantErr: `"dir" is a directory, not a file; call list_files with path="dir"`},
		{name: "missing", args: map[string]any{"path": "dir/nope.txt"}, wantErr: `"dir/nope.txt" does not exist`},
		{name: "under a file", args: map[string]any{"path": "short.txt/x"}, wantErr: `"short.txt/x" cannot be used: part of it is a file`},
		{name: "backslash", args: map[string]any{"path": `dir\x.txt`}, wantErr: "forward slashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, ws, "read_file", tt.args)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

var nextPage = regexp.MustCompile(`\n… \d+ more lines?: call read_file with offset_line=(\d+)$`)

// readAll follows read_file's pages to the end and returns the lines it
// showed, checking that each page is within limit bytes.
func readAll(t *testing.T, ws *workspace.Workspace, path string, limit int) (string, int) {
	t.Helper()
	var b strings.Builder
	pages := 0
	for offset := 1; ; pages++ {
		if pages > 100 {
			t.Fatal("too many pages")
		}
		out, err := run(t, ws, "read_file", map[string]any{"path": path, "offset_line": offset})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > limit {
			t.Errorf("page at line %d has %d bytes; want at most %d", offset, len(out), limit)
		}
		header, body, _ := strings.Cut(out, "\n")
		if want := fmt.Sprintf("%s (lines %d–", path, offset); !strings.HasPrefix(header, want) {
			t.Fatalf("header = %q; want it to start with %q", header, want)
		}
		m := nextPage.FindStringSubmatchIndex(body)
		if m == nil {
			b.WriteString(body + "\n")
			return b.String(), pages + 1
		}
		b.WriteString(body[:m[0]] + "\n")
		next, _ := strconv.Atoi(body[m[2]:m[3]])
		if next <= offset {
			t.Fatalf("next offset_line %d after %d", next, offset)
		}
		offset = next
	}
}

func TestReadFilePagination(t *testing.T) {
	wide := strings.Repeat("w", 199)
	var wideFile strings.Builder
	for i := range 500 {
		fmt.Fprintf(&wideFile, "%03d%s\n", i, wide) // 203 bytes a line
	}
	tests := []struct {
		name      string
		content   string
		wantPages int
	}{
		{"fits one page", numbered(1, 400), 1},
		{"by line count", numbered(1, 1001), 3},
		// 500 lines of 203 bytes is about 100 KiB; pages stop near 32 KiB.
		{"by size", wideFile.String(), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, _ := open(t, map[string]string{"f.txt": tt.content})
			got, pages := readAll(t, ws, "f.txt", 32<<10)
			if diff := cmp.Diff(tt.content, got); diff != "" {
				t.Errorf("pages joined (-want +got):\n%s", diff)
			}
			if pages != tt.wantPages {
				t.Errorf("%d pages; want %d", pages, tt.wantPages)
			}
		})
	}
}

// TestReadFileThroughExecutor checks that a full page survives the
// executor's output limits uncut.
func TestReadFileThroughExecutor(t *testing.T) {
	ws, _ := open(t, map[string]string{"f.txt": numbered(1, 1000)})
	reg, err := tool.NewRegistry(ws.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path":"f.txt","max_lines":2000}`)
	direct, err := run(t, ws, "read_file", args)
	if err != nil {
		t.Fatal(err)
	}
	res := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: "read_file", Args: args})
	if res.Outcome != tool.OutcomeOK {
		t.Fatalf("outcome %s: %s", res.Outcome, res.Output)
	}
	if diff := cmp.Diff(direct, res.Output); diff != "" {
		t.Errorf("executor changed the output (-direct +executor):\n%s", diff)
	}
}

func TestBinaryRefused(t *testing.T) {
	late := strings.Repeat("a", 9<<10) + "\x00"
	ws, dir := open(t, map[string]string{
		"bin":  "ELF\x00\x01\x02",
		"late": late, // NUL after the first 8 KiB: treated as text
	})
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string
	}{
		{"read_file", map[string]any{"path": "bin"}, `"bin" is a binary file (it contains NUL bytes), and read_file shows only text files`},
		{"edit_file", map[string]any{"path": "bin", "old_text": "ELF", "new_text": "FLE"}, `"bin" is a binary file`},
		{"read_file", map[string]any{"path": "late"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args["path"].(string), func(t *testing.T) {
			_, err := run(t, ws, tt.tool, tt.args)
			checkErr(t, err, tt.wantErr)
		})
	}
	want := map[string]string{"./": "", "bin": "ELF\x00\x01\x02", "late": late}
	if diff := cmp.Diff(want, snapshot(t, dir)); diff != "" {
		t.Errorf("workspace changed (-want +got):\n%s", diff)
	}
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		content   string
		want      string
		wantErr   string
		wantFiles map[string]string // added to or replacing the initial files
	}{
		{name: "new file", path: "new.txt", content: "hi\n", want: "wrote 3 bytes to new.txt", wantFiles: map[string]string{"new.txt": "hi\n"}},
		{name: "parent directories", path: "a/b/c.txt", content: "c", want: "wrote 1 byte to a/b/c.txt", wantFiles: map[string]string{"a/": "", "a/b/": "", "a/b/c.txt": "c"}},
		{name: "into existing directory", path: "dir/d.txt", content: "d", want: "wrote 1 byte to dir/d.txt", wantFiles: map[string]string{"dir/d.txt": "d"}},
		{name: "unclean path", path: "./dir/../e.txt", content: "e", want: "wrote 1 byte to e.txt", wantFiles: map[string]string{"e.txt": "e"}},
		{name: "overwrite", path: "old.txt", content: "new", want: "wrote 3 bytes to old.txt", wantFiles: map[string]string{"old.txt": "new"}},
		{name: "empty content", path: "old.txt", content: "", want: "wrote 0 bytes to old.txt", wantFiles: map[string]string{"old.txt": ""}},
		{name: "directory", path: "dir", content: "x", wantErr: `"dir" is a directory; give the path of a file`},
		{name: "root", path: ".", content: "x", wantErr: "is the workspace root"},
		{name: "under a file", path: "old.txt/x", content: "x", wantErr: `"old.txt/x" cannot be used: part of it is a file`},
		{name: "empty path", path: "", content: "x", wantErr: "path is empty"},
	}
	initial := map[string]string{"old.txt": "old", "dir/": ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := open(t, initial)
			want := snapshot(t, dir)
			for k, v := range tt.wantFiles {
				want[k] = v
			}
			// Twice: the tool is declared idempotent, so a second run must
			// give the same output and leave the same state.
			for range 2 {
				got, err := run(t, ws, "write_file", map[string]any{"path": tt.path, "content": tt.content})
				checkErr(t, err, tt.wantErr)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want, snapshot(t, dir)); diff != "" {
					t.Errorf("workspace (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestWriteFileMode(t *testing.T) {
	ws, dir := open(t, nil)
	if _, err := run(t, ws, "write_file", map[string]any{"path": "f", "content": "x"}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	// 0644 less the umask: never executable, never writable by others.
	if m := info.Mode().Perm(); m&0o133 != 0 {
		t.Errorf("mode %v; want at most 0644", m)
	}
}

func TestEditFile(t *testing.T) {
	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name     string
		file     string // initial content of f.go
		old, new string
		path     string // default "f.go"
		want     string
		wantErr  string
		wantFile string // default: file unchanged
	}{
		{name: "one occurrence", file: src, old: "func a() {\n\treturn 1", new: "func a() {\n\treturn 2", want: "edited f.go at line 1",
			wantFile: "func a() {\n\treturn 2\n}\n\nfunc b() {\n\treturn 1\n}\n"},
		{name: "line number", file: src, old: "func b", new: "func c", want: "edited f.go at line 5",
			wantFile: "func a() {\n\treturn 1\n}\n\nfunc c() {\n\treturn 1\n}\n"},
		{name: "delete", file: src, old: "\nfunc b() {\n\treturn 1\n}\n", new: "", want: "edited f.go at line 4",
			wantFile: "func a() {\n\treturn 1\n}\n"},
		{name: "unclean path", file: src, path: "./f.go", old: "a()", new: "z()", want: "edited f.go at line 1",
			wantFile: "func z() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"},
		{name: "not found", file: src, old: "return 3", new: "return 4",
			wantErr: `old_text was not found in "f.go". It must match the file exactly, including whitespace, indentation and line breaks; call read_file to see the current text and copy it exactly`},
		{name: "not found, whitespace differs", file: src, old: "func a() {\n    return 1", new: "x",
			wantErr: "A match exists if whitespace is ignored, so check the indentation (tabs or spaces)"},
		{name: "not found, line endings differ", file: "a\r\nb\r\n", old: "a\nb", new: "x",
			wantErr: `The file has Windows line endings: each line break in old_text must be "\r\n"`},
		{name: "two occurrences", file: src, old: "\treturn 1\n", new: "\treturn 2\n",
			wantErr: `old_text occurs 2 times in "f.go" (at lines 2 and 6), but it must occur exactly once; add surrounding lines to old_text`},
		{name: "overlapping occurrences", file: "aaa", old: "aa", new: "b",
			wantErr: `old_text occurs 2 times in "f.go" (at lines 1 and 1)`},
		{name: "many occurrences", file: strings.Repeat("x\n", 12), old: "x", new: "y",
			wantErr: `old_text occurs 12 times in "f.go" (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …)`},
		{name: "empty old_text", file: src, old: "", new: "x", wantErr: "old_text is empty"},
		{name: "no change", file: src, old: "a", new: "a", wantErr: "old_text and new_text are the same"},
		{name: "missing file", file: src, path: "g.go", old: "a", new: "b",
			wantErr: `"g.go" does not exist; call write_file to create it`},
		{name: "empty path", file: src, path: "", old: "a", new: "b", wantErr: "path is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := open(t, map[string]string{"f.go": tt.file})
			p := tt.path
			if p == "" && tt.name != "empty path" {
				p = "f.go"
			}
			got, err := run(t, ws, "edit_file", map[string]any{"path": p, "old_text": tt.old, "new_text": tt.new})
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			wantFile := tt.wantFile
			if wantFile == "" {
				wantFile = tt.file
			}
			want := map[string]string{"./": "", "f.go": wantFile}
			if diff := cmp.Diff(want, snapshot(t, dir)); diff != "" {
				t.Errorf("workspace (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidArgs(t *testing.T) {
	ws, _ := open(t, map[string]string{"f": "x"})
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": ""}},
		{"write_file", map[string]any{"path": "", "content": "x"}},
		{"edit_file", map[string]any{"path": "", "old_text": "x", "new_text": "y"}},
		{"read_file", map[string]any{"path": "f", "offset_line": 5}},
		{"list_files", map[string]any{"max_entries": -5}},
		{"edit_file", map[string]any{"path": "f", "old_text": "", "new_text": "y"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tool, tt.args), func(t *testing.T) {
			_, err := run(t, ws, tt.tool, tt.args)
			if !errors.Is(err, tool.ErrInvalidArgs) {
				t.Errorf("error = %v; want one wrapping tool.ErrInvalidArgs", err)
			}
		})
	}
}

func TestEscapes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	populate(t, base, map[string]string{
		"outside/secret": "secret",
		"ws/sub/f.txt":   "inside",
	})
	symlink(t, outside, filepath.Join(dir, "link"))
	symlink(t, filepath.Join(outside, "secret"), filepath.Join(dir, "flink"))
	symlink(t, filepath.Join("..", ".."), filepath.Join(dir, "sub", "up"))
	symlink(t, "sub", filepath.Join(dir, "inlink")) // inside: allowed
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	before := snapshot(t, base)

	const (
		dotdot   = `".." leads above the workspace root`
		absolute = "absolute paths are not allowed"
		link     = "it goes through a symbolic link that points outside the workspace"
	)
	paths := []struct {
		path, why string
	}{
		{"..", dotdot},
		{"../outside/secret", dotdot},
		{"sub/../../outside/secret", dotdot},
		{filepath.ToSlash(filepath.Join(outside, "secret")), absolute},
		{"/etc/passwd", absolute},
		{"link", link},
		{"link/secret", link},
		{"link/new.txt", link},
		{"link/newdir/new.txt", link},
		{"flink", link},
		{"sub/up/outside/secret", link},
		{"sub/up/ws/sub/f.txt", link}, // back inside, but only by way of outside
	}
	for _, p := range paths {
		for _, tl := range ws.Tools() {
			name := tl.Info().Name
			if p.path == ".." && name != "list_files" {
				continue
			}
			t.Run(name+" "+p.path, func(t *testing.T) {
				args := map[string]any{"path": p.path}
				switch name {
				case "write_file":
					args["content"] = "pwned"
				case "edit_file":
					args["old_text"], args["new_text"] = "secret", "pwned"
				case "grep":
					args["pattern"] = "secret"
				case "glob":
					args["pattern"] = "*"
				}
				out, err := run(t, ws, name, args)
				want := fmt.Sprintf("path %q is outside the workspace: %s.", p.path, p.why)
				checkErr(t, err, want)
				if !errors.Is(err, workspace.ErrOutside) {
					t.Errorf("error does not match ErrOutside")
				}
				if out != "" {
					t.Errorf("output = %q; want none", out)
				}
			})
		}
	}
	if diff := cmp.Diff(before, snapshot(t, base)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}

	// A link that stays inside the workspace works.
	got, err := run(t, ws, "read_file", map[string]any{"path": "inlink/f.txt"})
	if want := "inlink/f.txt (lines 1–1 of 1)\ninside"; got != want || err != nil {
		t.Errorf("read through an inside link = %q, %v; want %q", got, err, want)
	}
}

// TestConcurrentEdits checks that edits of one file in one batch of calls
// do not lose one another.
func TestConcurrentEdits(t *testing.T) {
	const n = 20
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<%d>\n", i)
	}
	ws, dir := open(t, map[string]string{"f": b.String()})
	reg, err := tool.NewRegistry(ws.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	var calls []tool.Call
	for i := range n {
		args, _ := json.Marshal(map[string]string{"path": "f", "old_text": fmt.Sprintf("<%d>", i), "new_text": fmt.Sprintf("[%d]", i)})
		calls = append(calls, tool.Call{ID: strconv.Itoa(i), Name: "edit_file", Args: args})
	}
	results := tool.NewExecutor(tool.ExecConfig{MaxParallel: n}).Run(context.Background(), reg, calls)
	for _, r := range results {
		if r.IsError {
			t.Errorf("call %s: %s", r.ID, r.Output)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("<", "[", ">", "]").Replace(b.String())
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("file after edits (-want +got):\n%s", diff)
	}
}

func TestAppendFile(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	tools, err := workspace.Lookup(ws, []string{workspace.AppendFile})
	if err != nil {
		t.Fatal(err)
	}
	app := tools[0]
	for _, line := range []string{"one\n", "two\n"} {
		args, _ := json.Marshal(map[string]string{"path": "log.txt", "text": line})
		out, err := app.Run(context.Background(), args)
		if err != nil || out != "appended 4 bytes to log.txt" {
			t.Fatalf("append: %q %v", out, err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	if string(got) != "one\ntwo\n" {
		t.Errorf("file = %q", got)
	}
	for _, bad := range []string{`{"path":"../x","text":"a"}`, `{"path":".","text":"a"}`, `{"path":"no/such/dir/x","text":"a"}`} {
		if out, err := app.Run(context.Background(), json.RawMessage(bad)); err == nil {
			t.Errorf("%s: no error (%q)", bad, out)
		}
	}
}
