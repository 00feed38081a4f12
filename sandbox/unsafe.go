package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// unsafeBackend runs the command without namespaces: a temporary
// workspace, rlimits, the scrubbed environment, the timeout and, as root,
// the unprivileged uid. The command sees the host's file system and
// network; processes that leave its process group (setsid) survive it.
type unsafeBackend struct{}

func (b *unsafeBackend) name() string { return IsolationUnsafe }

func (b *unsafeBackend) run(ctx context.Context, j *job) (exit, error) {
	// No mounts here: a cache is a symlink to the run's view of it.
	for _, c := range j.caches {
		dst := j.ws.abs(c.target)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return exit{}, err
		}
		if err := os.Symlink(c.src, dst); err != nil {
			return exit{}, err
		}
	}
	cmd := newCmd(j.argv, j)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: credential(j.ids),
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	// Pdeathsig fires when the forking thread exits: keep it ours.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return exit{}, fmt.Errorf("sandbox: starting the command: %w", err)
	}
	j.started()
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	var killed bool
	select {
	case err = <-done:
	case <-ctx.Done():
		killed = true
		syscall.Kill(-pgid, syscall.SIGKILL)
		err = <-done
	}
	// Whatever is left in the process group outlived the command, and
	// goes too. (What left the group with setsid is not seen.)
	survivors := !killed && syscall.Kill(-pgid, 0) == nil
	syscall.Kill(-pgid, syscall.SIGKILL)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return exit{}, fmt.Errorf("sandbox: waiting for the command: %w", err)
	}
	ex := decode(cmd.ProcessState, false)
	ex.killed, ex.survivors = killed, survivors
	return ex, nil
}
