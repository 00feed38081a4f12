// Command gen writes the big-repo example's workspace, a git repository of
// about 220 MB and 52,000 files (see internal/bigrepo):
//
//	go run ./examples/big-repo/gen examples/big-repo/workspace
//
// -files and -mb make it smaller or larger. The directory must not exist,
// be empty, or be one gen made before (it is then replaced).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ratchetloop/ratchet/internal/bigrepo"
)

func main() {
	files := flag.Int("files", bigrepo.Default.Files, "at least this many files")
	mb := flag.Int64("mb", bigrepo.Default.Bytes>>20, "at least this many MiB")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./examples/big-repo/gen [-files N] [-mb M] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	if err := bigrepo.Generate(flag.Arg(0), bigrepo.Size{Files: *files, Bytes: *mb << 20}); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: a git repository of at least %d files and %d MiB in %s\n", flag.Arg(0), *files, *mb, time.Since(start).Round(100*time.Millisecond))
}
