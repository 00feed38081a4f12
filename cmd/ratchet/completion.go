package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/store"
)

// commands are the subcommands completion offers, in usage order.
var commands = []string{"run", "ls", "show", "apply", "rm", "gc", "resume", "answer", "approve", "deny", "say", "fork",
	"verify", "replay", "sim", "eval", "ui", "worker", "doctor", "prices", "completion", "version", "help"}

// evalCommands are eval's subcommands.
var evalCommands = []string{"run", "report", "compare", "add", "rescore"}

// runArgCommands take a run as their first argument.
var runArgCommands = []string{"show", "apply", "rm", "resume", "answer", "approve", "deny", "say", "fork", "replay"}

// completionCommand is 'ratchet completion' and the run IDs its scripts complete.
type completionCommand struct{ *Main }

// run prints a completion script for a shell. The scripts
// complete subcommands, task files for run and verify, and run IDs (asked
// of 'ratchet __runs', which prints the newest IDs) where a run is wanted.
func (m completionCommand) run(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(m.Stderr, "Usage: ratchet completion bash|zsh|fish\n\n  bash: source <(ratchet completion bash)\n  zsh:  source <(ratchet completion zsh)\n  fish: ratchet completion fish | source")
		return exitUsage
	}
	cmds, runCmds, evalCmds := strings.Join(commands, " "), strings.Join(runArgCommands, " "), strings.Join(evalCommands, " ")
	switch args[0] {
	case "bash":
		fmt.Fprintf(m.Stdout, bashCompletion, cmds, strings.ReplaceAll(runCmds, " ", "|"), evalCmds)
	case "zsh":
		fmt.Fprintf(m.Stdout, "autoload -U +X bashcompinit && bashcompinit\n"+bashCompletion, cmds, strings.ReplaceAll(runCmds, " ", "|"), evalCmds)
	case "fish":
		fmt.Fprintf(m.Stdout, fishCompletion, cmds, runCmds, evalCmds)
	default:
		fmt.Fprintf(m.Stderr, "ratchet completion: unknown shell %q (want bash, zsh or fish)\n", args[0])
		return exitUsage
	}
	return exitDone
}

const bashCompletion = `# ratchet completion for bash (and zsh through bashcompinit)
_ratchet() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%s" -- "$cur"))
		return
	fi
	case "${COMP_WORDS[1]}" in
	%s)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "last $(ratchet __runs 2>/dev/null)" -- "$cur"))
		fi ;;
	completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
	eval)
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "%s" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi ;;
	*) COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
}
complete -o default -F _ratchet ratchet
`

const fishCompletion = `# ratchet completion for fish
complete -c ratchet -f -n '__fish_use_subcommand' -a '%s'
complete -c ratchet -f -n '__fish_seen_subcommand_from %s' -a 'last (ratchet __runs 2>/dev/null)'
complete -c ratchet -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'
complete -c ratchet -f -n '__fish_seen_subcommand_from eval; and not __fish_seen_subcommand_from run report compare add rescore' -a '%s'
complete -c ratchet -F -n '__fish_seen_subcommand_from run verify eval'
`

// runsForCompletion prints the IDs of the newest runs, one a line, for
// the completion scripts; it prints nothing when the database is missing.
func (m completionCommand) runsForCompletion(ctx context.Context) int {
	s, err := m.openStore(ctx, "")
	if err != nil {
		return exitInfra
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, store.Filter{Limit: 50})
	if err != nil {
		return exitInfra
	}
	for _, r := range runs {
		fmt.Fprintln(m.Stdout, r.ID)
	}
	return exitDone
}
