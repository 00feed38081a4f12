//go:build !unix

package mcp

import "os/exec"

func ownGroup(cmd *exec.Cmd) {}

// killGroup kills cmd's process; its children are on their own.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
