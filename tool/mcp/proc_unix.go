//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a new process group, so that a signal to the group
// reaches its children and a terminal's Ctrl-C does not (ratchet stops the
// server itself, after the run).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
