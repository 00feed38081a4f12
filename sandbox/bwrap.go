package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// bwrapBackend runs the command under bubblewrap.
type bwrapBackend struct {
	once sync.Once
	path string
	err  error
}

func (b *bwrapBackend) name() string { return IsolationBwrap }

// find locates bwrap and checks that it knows every option we use.
func (b *bwrapBackend) find() (string, error) {
	b.once.Do(func() {
		b.path, b.err = lookBinary("bwrap")
		if b.err != nil {
			b.err = errors.New("bwrap not found (apt-get install bubblewrap)")
			return
		}
		out, _ := exec.Command(b.path, "--help").CombinedOutput()
		for _, opt := range []string{"--disable-userns", "--die-with-parent", "--info-fd", "--size"} {
			if !bytes.Contains(out, []byte(opt)) {
				b.err = fmt.Errorf("%s lacks %s (bubblewrap 0.8 or newer needed)", b.path, opt)
				return
			}
		}
	})
	return b.path, b.err
}

// args returns bwrap's arguments for j.
func (b *bwrapBackend) args(j *job) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session",
		"--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
	}
	binds, links := systemDirs()
	for _, p := range binds {
		a = append(a, "--ro-bind", p, p)
	}
	for _, l := range links {
		a = append(a, "--symlink", l[0], l[1])
	}
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(j.limits.Memory, 10), "--tmpfs", "/tmp",
		"--bind", j.ws.dir, j.ws.view,
		"--bind", j.ws.home, j.ws.home,
	)
	if j.ws.reportDir != "" {
		a = append(a, "--bind", j.ws.reportDir, j.ws.reportDir)
	}
	for _, c := range j.caches {
		a = append(a, "--bind", c.src, j.ws.inside(c.target))
	}
	if !j.ws.unsafe {
		for _, m := range j.ws.mounts {
			a = append(a, "--ro-bind", m.copy, j.ws.inside(m.target))
		}
	}
	empty := filepath.Join(j.ws.staging, "empty")
	for _, g := range j.ws.guards {
		if g.pycache {
			a = append(a, "--ro-bind", empty, j.ws.inside(g.rel))
		}
	}
	// bwrap passes inherited descriptors on to the command and closes its
	// info fd, which comes after the caller's extra files.
	a = append(a, "--chdir", j.ws.view, "--info-fd", strconv.Itoa(3+len(j.extra)), "--")
	return append(a, j.argv...)
}

func (b *bwrapBackend) run(ctx context.Context, j *job) (exit, error) {
	bwrap, err := b.find()
	if err != nil {
		return exit{}, err
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return exit{}, err
	}
	defer infoR.Close()
	cmd := newCmd(append([]string{bwrap}, b.args(j)...), j)
	cmd.ExtraFiles = append(slices.Clone(j.extra), infoW)
	// As root, bwrap itself runs as the sandbox uid and builds its
	// namespaces unprivileged, mapping 65534 inside to that uid.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credential(j.ids), Setpgid: true}

	// bwrap's --die-with-parent watches the thread that forked it: keep
	// that thread ours until bwrap is gone, so that no other goroutine can
	// lock it and let it exit under us.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	infoW.Close()
	if err != nil {
		return exit{}, fmt.Errorf("sandbox: starting bwrap: %w", err)
	}
	j.started()
	// The sandbox's init, as a host pid, from bwrap's --info-fd.
	pid1 := make(chan proc, 1)
	go func() {
		defer close(pid1)
		data, _ := io.ReadAll(io.LimitReader(infoR, 1<<16))
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		if json.Unmarshal(data, &info) == nil && info.ChildPID > 0 {
			if p, ok := findProc(info.ChildPID); ok {
				pid1 <- p
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var killed bool
	select {
	case err = <-done:
	case <-ctx.Done():
		killed = true
		// Killing the sandbox's pid 1 kills every process in its pid
		// namespace, setsid or not. Without its pid, kill bwrap:
		// --die-with-parent then kills pid 1.
		select {
		case p, ok := <-pid1:
			if ok {
				p.kill()
			} else {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			pid1 = nil
		case <-time.After(100 * time.Millisecond):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case err = <-done:
		case <-time.After(2 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	// bwrap exits as soon as its init reports the command's status, while
	// init may still be killing what is left in the namespace: wait until
	// init, and so every process of the sandbox, is gone.
	if pid1 != nil {
		if p, ok := <-pid1; ok && !p.waitGone(2*time.Second) {
			p.kill()
			p.waitGone(5 * time.Second)
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return exit{}, fmt.Errorf("sandbox: waiting for bwrap: %w", err)
	}
	ex := decode(cmd.ProcessState, true)
	ex.killed, ex.noCPU = killed, true
	if !killed && ex.code == 1 {
		// bwrap reports its own setup failures as "bwrap: ..." and exit
		// status 1, before the command ever ran.
		out, _, n := j.stdout.result()
		msg, _, _ := j.stderr.result()
		if n == 0 && len(out) == 0 && bytes.HasPrefix(msg, []byte("bwrap: ")) {
			return exit{}, fmt.Errorf("sandbox: bwrap failed: %s", strings.TrimSpace(string(msg)))
		}
	}
	return ex, nil
}
