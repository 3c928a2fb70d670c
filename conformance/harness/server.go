package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ServerOptions configures one `skills --standalone` instance.
type ServerOptions struct {
	// Bin is the skills binary.
	Bin string
	// Dir is a scratch directory; the instance gets Dir/<Name>/{data,config.yaml}.
	Dir string
	// Name tells instances apart (directory and error messages).
	Name string
	// Config, when non-nil, is written to the instance's config.yaml verbatim
	// (it may be malformed on purpose). Nil: --config names a file that does
	// not exist, so the instance runs on the defaults.
	Config []byte
	// Args are extra flags, e.g. --strict-fetch.
	Args []string
	// Port is the loopback port to serve on; 0 picks a free one.
	Port int
}

// Server is a running `skills --standalone`.
type Server struct {
	URL string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	output   *syncBuffer
}

// StartServer starts the binary on a free loopback port and waits until
// skills::list answers through the embedded engine.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	home := filepath.Join(o.Dir, o.Name)
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return nil, err
	}
	configPath := filepath.Join(home, "config.yaml")
	if o.Config != nil {
		if err := os.WriteFile(configPath, o.Config, 0o644); err != nil {
			return nil, err
		}
	} else {
		configPath = filepath.Join(home, "no-config.yaml")
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	url := fmt.Sprintf("ws://127.0.0.1:%d", port)
	// No HTTP listener unless the spec asks for one (o.Args come last and
	// win): its default port is one for the whole machine.
	args := append([]string{"--standalone", "--url", url, "--data", filepath.Join(home, "data"), "--config", configPath, "--mcp-addr", ""}, o.Args...)
	s := &Server{URL: url, done: make(chan struct{}), output: &syncBuffer{}}
	s.cmd = exec.Command(o.Bin, args...)
	s.cmd.Dir = home
	s.cmd.Stdout, s.cmd.Stderr = s.output, s.output
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()

	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	readyCtx, cancelExit := contextUntil(readyCtx, s.done)
	defer cancelExit()
	c, err := Dial(readyCtx, url, "skills-conformance-probe")
	if err == nil {
		err = c.WaitForRegistry(readyCtx)
		c.Close()
	}
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("skills instance %q (%s %v) did not come up: %w\n--- its output ---\n%s",
			o.Name, o.Bin, args, err, s.Output())
	}
	return s, nil
}

// contextUntil cancels ctx as soon as done is closed.
func contextUntil(ctx context.Context, done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Stop sends SIGTERM, waits for the exit (SIGKILL after 15 s) and is
// idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// Exited reports whether the process ended, with its wait error.
func (s *Server) Exited() (bool, error) {
	select {
	case <-s.done:
		return true, s.waitErr
	default:
		return false, nil
	}
}

// Output is everything the instance printed so far.
func (s *Server) Output() string { return s.output.String() }

// FreePort asks the kernel for an unused loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener without a TCP address")
	}
	return addr.Port, nil
}

// RunBinary runs the binary with args to completion (e.g. --manifest) and
// returns stdout and stderr separately.
func RunBinary(ctx context.Context, bin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
