package execcheck

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
)

// Format io judges a program by what it prints, as an online judge does:
// each case runs the command afresh in its own sandbox with the case's
// standard input and arguments, and ratchet compares the output with the
// expected one outside every sandbox, so no code of the candidate runs
// where the verdict is made. A Checker, when set, judges instead of the
// comparison, in a sandbox of its own that the candidate never shares.

// Case is one input and its expected output.
type Case struct {
	// Name names the case in feedback (default "case N").
	Name string
	// Stdin is the program's standard input; Args are appended to the
	// command.
	Stdin string
	Args  []string
	// Stdout is the expected output, compared line by line without the
	// spaces that end a line or the empty lines that end the output.
	Stdout string
}

// checkCases runs every case of an io check against the candidate files.
func (c *checker) checkCases(ctx context.Context, files map[string][]byte, limits sandbox.Limits) (verify.Verdict, error) {
	v := verify.Verdict{Check: c.cfg.Name, Provenance: verify.Execution, Confidence: 1, Isolation: Judge}
	for i, cs := range c.cfg.Cases {
		name := cmp.Or(cs.Name, "case "+strconv.Itoa(i+1))
		res, err := c.run(ctx, sandbox.Spec{
			Files: files, Command: append(slices.Clone(c.cfg.Command), cs.Args...), Env: c.cfg.Env,
			Limits: limits, Stdin: []byte(cs.Stdin),
		})
		if err != nil {
			return verify.Verdict{}, fmt.Errorf("exec check %s, %s: %w", c.cfg.Name, name, err)
		}
		if res.Isolation == sandbox.IsolationUnsafe {
			v.Confidence = 0.9
		}
		v.Where = name
		switch {
		case res.TimedOut:
			v.Detail = fmt.Sprintf("%s: timed out after %s and was killed (an infinite loop, or far too slow)", name, res.Duration.Round(time.Millisecond))
		case res.CPUExceeded:
			v.Detail = fmt.Sprintf("%s: used up its CPU time limit and was killed (%s)", name, res.Signal)
		case res.ExitCode != 0:
			v.Detail = fmt.Sprintf("%s: %s exited with status %d%s:\n%s", name, c.cfg.Command[0], res.ExitCode, signal(res), tail(res, c.cfg.MaxFeedback))
		case res.TruncatedStdout:
			v.Detail = fmt.Sprintf("%s: printed %d bytes, more than the output limit", name, res.StdoutBytes)
		case len(c.cfg.Checker) > 0:
			ok, why, err := c.checkOutput(ctx, cs, res.Stdout)
			if err != nil {
				return verify.Verdict{}, fmt.Errorf("exec check %s, %s: the checker: %w", c.cfg.Name, name, err)
			}
			if ok {
				continue
			}
			v.Detail = clip(fmt.Sprintf("%s: the checker rejected the output%s\n%s\noutput: %q", name, why, input(cs), res.Stdout), c.cfg.MaxFeedback)
		case normalOutput(string(res.Stdout)) == normalOutput(cs.Stdout):
			continue
		default:
			v.Detail = clip(fmt.Sprintf("%s: wrong output\n%s\nexpected: %q\ngot:      %q", name, input(cs), normalOutput(cs.Stdout), normalOutput(string(res.Stdout))), c.cfg.MaxFeedback)
		}
		return v, nil
	}
	v.OK, v.Where = true, ""
	v.Detail = fmt.Sprintf("%d cases passed", len(c.cfg.Cases))
	return v, nil
}

// checkOutput runs the checker on one case's output, in a sandbox holding
// the mounted tests and the files input, expected and output, which it
// names as its arguments; exit status 0 accepts.
func (c *checker) checkOutput(ctx context.Context, cs Case, out []byte) (ok bool, why string, err error) {
	res, err := c.cfg.Runner.Run(ctx, sandbox.Spec{
		Files:   map[string][]byte{"input": []byte(cs.Stdin), "expected": []byte(cs.Stdout), "output": out},
		Mounts:  c.cfg.Tests,
		Command: append(slices.Clone(c.cfg.Checker), "input", "expected", "output"),
		Env:     c.cfg.Env,
	})
	if err != nil {
		return false, "", err
	}
	if res.TimedOut || res.CPUExceeded || res.Signal != "" {
		return false, "", fmt.Errorf("%s did not finish (%s)", c.cfg.Checker[0], cmp.Or(res.Signal, "timed out"))
	}
	if res.ExitCode == 0 {
		return true, "", nil
	}
	if msg := strings.TrimSpace(string(res.Stdout) + "\n" + string(res.Stderr)); msg != "" {
		why = ": " + clip(msg, 300)
	}
	return false, why, nil
}

// input describes a case's input for feedback.
func input(cs Case) string {
	in := fmt.Sprintf("input: %q", cs.Stdin)
	if len(cs.Args) > 0 {
		in += fmt.Sprintf(", arguments: %q", cs.Args)
	}
	return in
}

var lineEnd = regexp.MustCompile(`[ \t\r]+\n`)

// normalOutput is out without the spaces that end its lines or the empty
// lines that end it.
func normalOutput(out string) string {
	return strings.TrimRight(lineEnd.ReplaceAllString(out+"\n", "\n"), " \t\r\n")
}
