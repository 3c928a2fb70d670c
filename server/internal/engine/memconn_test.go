package engine

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A worker on an in-process connection is an ordinary worker: callers on
// sockets reach its functions and it reaches theirs and the built-ins.
func TestInProcessConnection(t *testing.T) {
	e := startEngine(t, Config{})
	mem := dialWorkerWith(t, &websocket.Dialer{NetDialContext: e.DialContext}, e.URL())
	mem.register("mem::echo", nil)
	mem.sync()
	go mem.serve(func(f frame) any { return map[string]any{"echo": f.obj("data")["x"]} })

	sock := dialWorker(t, e.URL())
	var out struct{ Echo string }
	mustUnmarshal(t, sock.result("mem::echo", map[string]any{"x": "hi"}), &out)
	if out.Echo != "hi" {
		t.Fatalf("mem::echo through an in-process connection = %+v", out)
	}
	sock.result("state::set", map[string]any{"scope": "s", "key": "k", "value": 1})
	mem2 := dialWorkerWith(t, &websocket.Dialer{NetDialContext: e.DialContext}, e.URL())
	if got := mem2.result("state::get", map[string]any{"scope": "s", "key": "k"}); string(got) != "1" {
		t.Fatalf("state::get from an in-process connection = %s; want 1", got)
	}
}

func TestInProcessConnectionEndsWithEngine(t *testing.T) {
	e := startEngine(t, Config{})
	c, err := e.DialContext(context.Background(), "tcp", "ignored")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after engine Close = %v; want the connection closed", err)
	}
	if _, err := e.DialContext(context.Background(), "tcp", "ignored"); err == nil {
		t.Fatal("DialContext after Close succeeded")
	}
}

func TestMemPipeDeadlinesAndClose(t *testing.T) {
	a, b := memPipe()
	if err := a.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	_, err := a.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline = %v; want a timeout", err)
	}
	_ = a.SetReadDeadline(time.Time{})
	if _, err := b.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	n, err := a.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read = %q, %v; want what was written before Close", buf[:n], err)
	}
	if _, err := a.Read(buf); err == nil {
		t.Fatal("read after the peer closed and everything was read: want EOF")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed pipe succeeded")
	}
}

// A memPipe delivers a stream in order and complete whatever the sizes of
// the writes and reads (the buffer is reused and compacted as it drains).
func TestMemPipeStreamsInOrder(t *testing.T) {
	a, b := memPipe()
	var want bytes.Buffer
	for i := range 2000 {
		want.Write(bytes.Repeat([]byte{byte(i)}, 1+i*37%5000))
	}
	go func() {
		src := want.Bytes()
		for i := 0; len(src) > 0; i++ {
			n := min(len(src), 1+i*53%7000)
			if _, err := a.Write(src[:n]); err != nil {
				return
			}
			src = src[n:]
		}
	}()
	got := make([]byte, 0, want.Len())
	buf := make([]byte, 3000)
	for i := 0; len(got) < want.Len(); i++ {
		n, err := b.Read(buf[:1+i*17%len(buf)])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the stream read differs from the stream written")
	}
	_ = a.Close()
}
