package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// nsBackend builds the sandbox from Go, without bubblewrap. It needs root:
// a goroutine locks its OS thread, gives that thread a private mount
// namespace (unshare(CLONE_NEWNS) also unshares the thread's root and
// working directory), builds the new root on a tmpfs, pivot_roots into it
// and clones the command from that thread into new pid, net, ipc, uts and
// cgroup namespaces, as the sandbox uid. The thread is never unlocked, so
// the Go runtime discards it afterwards.
//
// Differences from bwrap: no /proc (a proc mount shows the pid namespace
// of the mounter, which would be the host's), the loopback interface stays
// down, the hostname is the host's, and the command runs as the sandbox uid
// of the host rather than in a user namespace, so RLIMIT_NPROC counts all
// processes of that uid on the host. The command itself is pid 1 of its
// namespace, so signals it does not handle are ignored, including the
// SIGXCPU of the soft CPU limit: it dies of SIGKILL at the hard limit, one
// second later.
type nsBackend struct{}

func (b *nsBackend) name() string { return IsolationNamespaces }

func (b *nsBackend) run(ctx context.Context, j *job) (exit, error) {
	if !j.ids.root {
		return exit{}, errors.New("the namespaces backend needs root (CAP_SYS_ADMIN); install bubblewrap instead")
	}
	newRoot := filepath.Join(j.ws.run, "root")
	if err := os.Mkdir(newRoot, 0o755); err != nil {
		return exit{}, err
	}
	type outcome struct {
		ps  *os.ProcessState
		err error
	}
	started := make(chan error, 1)
	pidc := make(chan int, 1)
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see nsBackend
		if err := buildRoot(newRoot, j); err != nil {
			started <- fmt.Errorf("sandbox: building the namespace root: %w", err)
			return
		}
		cmd := newCmd(j.argv, j)
		cmd.Dir = j.ws.view // the thread is in the new root already
		cmd.SysProcAttr = &syscall.SysProcAttr{
			// No CLONE_NEWUSER: Go writes the id maps through
			// /proc/PID/uid_map, and this thread has no /proc any more.
			// The command runs as the sandbox uid of the host instead.
			Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC |
				syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
			Credential: credential(j.ids),
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("sandbox: starting the command: %w", err)
			return
		}
		started <- nil
		j.started()
		pidc <- cmd.Process.Pid
		err := cmd.Wait()
		done <- outcome{cmd.ProcessState, err}
	}()
	if err := <-started; err != nil {
		return exit{}, err
	}
	pid := <-pidc
	var o outcome
	var killed bool
	select {
	case o = <-done:
	case <-ctx.Done():
		killed = true
		// The command is pid 1 of its namespace: killing it kills all.
		syscall.Kill(pid, syscall.SIGKILL)
		o = <-done
	}
	var ee *exec.ExitError
	if o.err != nil && !errors.As(o.err, &ee) && !errors.Is(o.err, exec.ErrWaitDelay) {
		return exit{}, fmt.Errorf("sandbox: waiting for the command: %w", o.err)
	}
	ex := decode(o.ps, false)
	ex.killed = killed
	return ex, nil
}

// buildRoot runs on the locked thread: it leaves the thread in a private
// mount namespace whose root is newRoot, laid out like bwrap's.
func buildRoot(newRoot string, j *job) error {
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	const nosuid = syscall.MS_NOSUID | syscall.MS_NODEV
	if err := syscall.Mount("tmpfs", newRoot, "tmpfs", nosuid, "mode=0755,size=16m"); err != nil {
		return fmt.Errorf("root tmpfs: %w", err)
	}
	in := func(p string) string { return filepath.Join(newRoot, p) }
	binds, links := systemDirs()
	for _, p := range binds {
		if err := bindRO(p, in(p), true); err != nil {
			return err
		}
	}
	for _, l := range links {
		if err := os.Symlink(l[0], in(l[1])); err != nil {
			return err
		}
	}
	// /dev: a few device nodes bound from the host.
	if err := mountTmpfs(in("/dev"), syscall.MS_NOSUID, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom"} {
		if err := touch(in("/dev/" + d)); err != nil {
			return err
		}
		if err := syscall.Mount("/dev/"+d, in("/dev/"+d), "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", d, err)
		}
	}
	for fd, name := range []string{"stdin", "stdout", "stderr"} {
		if err := os.Symlink("/proc/self/fd/"+strconv.Itoa(fd), in("/dev/"+name)); err != nil {
			return err
		}
	}
	if err := os.Symlink("/proc/self/fd", in("/dev/fd")); err != nil {
		return err
	}
	size := "size=" + strconv.FormatInt(j.limits.Memory, 10)
	if err := mountTmpfs(in("/dev/shm"), nosuid, "mode=1777,"+size); err != nil {
		return err
	}
	if err := mountTmpfs(in("/tmp"), nosuid, "mode=1777,"+size); err != nil {
		return err
	}
	if err := os.Mkdir(in("/proc"), 0o555); err != nil {
		return err
	}
	// The workspace, at its fixed path, then the tests over it.
	ws := in(j.ws.view)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(j.ws.dir, ws, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("binding the workspace: %w", err)
	}
	if err := syscall.Mount("", ws, "", syscall.MS_BIND|syscall.MS_REMOUNT|nosuid, ""); err != nil {
		return fmt.Errorf("remounting the workspace: %w", err)
	}
	for _, d := range []string{j.ws.home, j.ws.reportDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(in(d), 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(d, in(d), "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", d, err)
		}
		if err := syscall.Mount("", in(d), "", syscall.MS_BIND|syscall.MS_REMOUNT|nosuid, ""); err != nil {
			return fmt.Errorf("remounting %s: %w", d, err)
		}
	}
	for _, c := range j.caches {
		dst := in(j.ws.inside(c.target))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(c.src, dst, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding cache %s: %w", c.src, err)
		}
	}
	for _, m := range j.ws.mounts {
		if err := bindRO(m.copy, in(j.ws.inside(m.target)), false); err != nil {
			return err
		}
	}
	empty := filepath.Join(j.ws.staging, "empty")
	for _, g := range j.ws.guards {
		if g.pycache {
			if err := bindRO(empty, in(j.ws.inside(g.rel)), false); err != nil {
				return err
			}
		}
	}
	// Into the new root; the old one is detached and gone.
	old := in("/.oldroot")
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := syscall.PivotRoot(newRoot, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		return err
	}
	if err := syscall.Unmount("/.oldroot", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := os.Remove("/.oldroot"); err != nil {
		return err
	}
	if err := syscall.Mount("", "/", "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|nosuid, ""); err != nil {
		return fmt.Errorf("making the root read-only: %w", err)
	}
	return nil
}

// bindRO bind-mounts src read-only on dst, creating dst like src.
func bindRO(src, dst string, recursive bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else {
		err = touch(dst)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	flags := uintptr(syscall.MS_BIND)
	if recursive {
		flags |= syscall.MS_REC
	}
	if err := syscall.Mount(src, dst, "", flags, ""); err != nil {
		return fmt.Errorf("binding %s: %w", src, err)
	}
	// A bind remount changes this mount's flags only; keep noexec and
	// nodev where the source had them (ST_ and MS_ values agree for these).
	var st syscall.Statfs_t
	if err := syscall.Statfs(dst, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|keep, ""); err != nil {
		return fmt.Errorf("making %s read-only: %w", dst, err)
	}
	return nil
}

func mountTmpfs(dst string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dst, "tmpfs", flags, data); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", dst, err)
	}
	return nil
}

func touch(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
