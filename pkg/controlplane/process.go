package controlplane

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// stopGrace is how long a process has to stop after SIGTERM before it is killed.
const stopGrace = 15 * time.Second

// Process is a child process that dies with this one.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts path with args, writing its output to log.
func StartProcess(log io.Writer, path string, args ...string) (*Process, error) {
	return startProcessEnv(log, nil, path, args...)
}

// startProcessEnv is StartProcess with env added to this process's
// environment.
func startProcessEnv(log io.Writer, env []string, path string, args ...string) (*Process, error) {
	c := exec.Command(path, args...)
	if len(env) > 0 {
		c.Env = append(os.Environ(), env...)
	}
	c.Stdout, c.Stderr = log, log
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(path), err)
	}
	p := &Process{cmd: c, done: make(chan struct{})}
	go func() {
		err := c.Wait()
		p.err = fmt.Errorf("%s exited: %v", filepath.Base(path), err)
		close(p.done)
	}()
	return p, nil
}

// Exited returns nil while the process runs, and why it ended once it has.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop sends SIGTERM, so a scheduler gives up its leader lease, and kills the
// process if it has not ended within stopGrace. Stop on nil does nothing.
func (p *Process) Stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill ends the process at once with SIGKILL, as a crash or an OOM kill
// would, and waits for it. Kill on nil does nothing.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}
