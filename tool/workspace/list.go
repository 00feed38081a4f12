package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/tool"
)

const (
	defaultMaxEntries = 200
	maxEntriesCap     = 1000
	// listMaxBytes bounds the output of list_files, which stops listing
	// before it would exceed it, so the executor never cuts a listing.
	listMaxBytes = 64 << 10
	// omittedCap bounds how many omitted entries list_files counts.
	omittedCap = 10000
)

const listDescription = `List the files and directories in the workspace, recursively, sorted by path, one per line. Directories end with "/", files show their size, symbolic links show their target. The .git directory is skipped. Paths are relative to the workspace root and can be passed as they are to read_file, write_file and edit_file. Long listings are cut after max_entries entries; list a subdirectory to see the rest.`

type listArgs struct {
	Path       string `json:"path,omitempty" jsonschema:"the directory to list, relative to the workspace root (default \".\", the whole workspace)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"the most entries to list (default 200, at most 1000)"`
}

func (ws *Workspace) listFiles(ctx context.Context, in listArgs) (string, error) {
	if in.Path == "" {
		in.Path = "."
	}
	p, err := clean(in.Path)
	if err != nil {
		return "", err
	}
	limit := in.MaxEntries
	switch {
	case limit < 0:
		return "", fmt.Errorf("%w: max_entries must be positive, not %d", tool.ErrInvalidArgs, limit)
	case limit == 0:
		limit = defaultMaxEntries
	case limit > maxEntriesCap:
		limit = maxEntriesCap
	}

	fsys := ws.root.FS()
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return "", fail(in.Path, err)
	}
	if !info.IsDir() {
		return entryLine(ws, p, fs.FileInfoToDirEntry(info)), nil
	}

	var (
		out       strings.Builder
		listed    int
		omitted   int
		budget    = listMaxBytes - 256 - len(p) // room for the last line
		outOfRoom bool                          // budget reached before limit
		stopping  bool                          // omittedCap reached
	)
	err = fs.WalkDir(fsys, p, func(name string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if name == p || d == nil {
				return err
			}
			// A directory that cannot be read is listed with the reason;
			// its contents are skipped.
			if listed < limit {
				fmt.Fprintf(&out, "%s/ (its contents cannot be listed: %v)\n", name, unwrapPath(err))
				listed++
			}
			return nil
		}
		if name == p {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if listed < limit {
			line := entryLine(ws, name, d)
			if out.Len()+len(line)+1 <= budget {
				out.WriteString(line)
				out.WriteByte('\n')
				listed++
				return nil
			}
			limit, outOfRoom = listed, true // omit the rest
		}
		omitted++
		if omitted >= omittedCap {
			stopping = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return "", err
		}
		return "", fail(in.Path, err)
	}

	if listed == 0 && omitted == 0 {
		if p == "." {
			return "the workspace is empty", nil
		}
		return fmt.Sprintf("%s/ is an empty directory", p), nil
	}
	if omitted > 0 {
		count := "1 more entry"
		if omitted != 1 {
			count = fmt.Sprintf("%d more entries", omitted)
		}
		if stopping {
			count = "at least " + count
		}
		fmt.Fprintf(&out, "… %s omitted: call list_files with a subdirectory as path", count)
		if !outOfRoom && limit < maxEntriesCap {
			fmt.Fprintf(&out, ", or with a larger max_entries (at most %d)", maxEntriesCap)
		}
		out.WriteByte('\n')
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// entryLine describes one entry of a listing.
func entryLine(ws *Workspace, name string, d fs.DirEntry) string {
	switch t := d.Type(); {
	case t.IsDir():
		return name + "/"
	case t&fs.ModeSymlink != 0:
		target, err := ws.root.Readlink(osPath(name))
		if err != nil {
			return name + " (symbolic link)"
		}
		return fmt.Sprintf("%s -> %s (symbolic link)", name, target)
	case t.IsRegular():
		info, err := d.Info()
		if err != nil {
			return name
		}
		return fmt.Sprintf("%s (%s)", name, words.Count(info.Size(), "byte"))
	default:
		return name + " (special file)"
	}
}

// unwrapPath drops the path and system call from a *fs.PathError.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
