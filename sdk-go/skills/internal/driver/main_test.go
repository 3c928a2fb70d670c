package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/skills"
)

func TestDecodeCommand(t *testing.T) {
	c, err := decodeCommand(`{"id": 3, "cmd": "skill", "skill_id": "resend", "markdown": "# r"}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.id) != "3" || c.cmd != "skill" || len(c.args) != 2 || string(c.args["skill_id"]) != `"resend"` || string(c.args["markdown"]) != `"# r"` {
		t.Fatalf("got %+v", c)
	}
	// A second "id" is no argument: plain JSON decoding keeps the last one.
	c, err = decodeCommand(`{"id": 4, "cmd": "skill", "id": "resend", "markdown": "x"}`)
	if err != nil || string(c.id) != `"resend"` || c.args["id"] != nil {
		t.Fatalf("duplicate id: %+v, %v", c, err)
	}
	if _, err := c.stringArg("skill_id"); err == nil || err.Error() != `skill: missing argument "skill_id" (a string)` {
		t.Fatalf("missing skill_id: %v", err)
	}
	c, err = decodeCommand(`{"cmd": "hello"}`)
	if err != nil || string(c.id) != "null" {
		t.Fatalf("no frame id: %+v, %v", c, err)
	}
	c, err = decodeCommand(`{"id": 5, "cmd": 2}`)
	if err == nil || string(c.id) != "5" || err.Error() != `"cmd" must be a string, got 2` {
		t.Fatalf("cmd not a string: %+v, %v", c, err)
	}
	for bad, want := range map[string]string{
		`[1]`:                      "a command must be a JSON object",
		`null`:                     "a command must be a JSON object",
		`{"id":1}`:                 `missing "cmd" (the command name, a string)`,
		`{"id":1`:                  "unexpected end of JSON input",
		`{"id":1,"cmd":"hello"} x`: "invalid character 'x' after top-level value",
	} {
		if _, err := decodeCommand(bad); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", bad, err, want)
		}
	}
}

// TestDriverProtocol runs the driver against an engine URL nobody listens
// on: everything that needs no registry, and the give-up path.
func TestDriverProtocol(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("ws://%s", l.Addr())
	l.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exited := make(chan int, 1)
	go func() { exited <- run(url, inR, outW, io.Discard); outW.Close() }()
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %s", sc.Text())
				continue
			}
			lines <- m
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	var seen []map[string]any
	replyTo := func(id float64) map[string]any {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("driver exited before replying to %v", id)
				}
				seen = append(seen, m)
				if m["id"] == id {
					return m
				}
			case <-timeout:
				t.Fatalf("no reply to %v", id)
			}
		}
	}

	send(`{"id":1,"cmd":"hello"}`)
	if r := replyTo(1); r["ok"] != true || fmt.Sprint(r["result"]) != "map[sdk:go version:0.1.0]" {
		t.Fatalf("hello: %v", r)
	}
	send(`{"id":2,"cmd":"configure","backoff":{"initial_ms":5,"multiplier":2,"max_ms":10,"give_up_ms":100}}`)
	if r := replyTo(2); r["ok"] != true {
		t.Fatalf("configure: %v", r)
	}
	send(`{"id":3,"cmd":"skill","skill_id":"a/","markdown":"x"}`)
	if r := replyTo(3); r["ok"] != false || r["error"] != `id may not have a leading or trailing '/': "a/"` {
		t.Fatalf("skill: %v", r)
	}
	send(`{"id":4,"cmd":"prompt","fixture":"send-email","name":"Bad Name"}`)
	if r := replyTo(4); r["error"] != `name may only contain lowercase ASCII letters, digits, '-' and '_': "Bad Name"` {
		t.Fatalf("prompt: %v", r)
	}
	send(`{"id":5,"cmd":"section","path":"state/set","output":"x"}`)
	if r := replyTo(5); r["error"] != `Function 'state::set' is in an internal namespace and cannot back a skill resource` {
		t.Fatalf("section: %v", r)
	}
	send(`{"id":6,"cmd":"nope"}`)
	if r := replyTo(6); r["ok"] != false {
		t.Fatalf("unknown: %v", r)
	}
	send(`not json`)
	send(`{"id":7,"cmd":"skill","markdown":"# lonely"}`)
	if r := replyTo(7); r["ok"] != false || r["error"] != `skill: missing argument "skill_id" (a string)` {
		t.Fatalf("skill without skill_id: %v", r)
	}
	send(`{"id":11,"cmd":"function","fixture":"echo","function_id":7}`)
	if r := replyTo(11); r["ok"] != false || r["error"] != `function: argument "function_id" must be a string, got 7` {
		t.Fatalf("function with a numeric function_id: %v", r)
	}
	send(`{"id":12,"cmd":"skill","skill_id":"lonely","markdown":"# lonely"}`)
	if r := replyTo(12); r["ok"] != true {
		t.Fatalf("skill: %v", r)
	}
	send(`{"id":8,"cmd":"start"}`)
	if r := replyTo(8); r["ok"] != true || fmt.Sprint(r["result"]) != "map[registered:false rejected:[]]" {
		t.Fatalf("start: %v", r)
	}
	send(`{"id":9,"cmd":"configure","backoff":{"initial_ms":1}}`)
	if r := replyTo(9); r["ok"] != false {
		t.Fatalf("configure after start: %v", r)
	}
	send(`{"id":10,"cmd":"close","unregister":false}`)
	if r := replyTo(10); r["ok"] != true {
		t.Fatalf("close: %v", r)
	}
	for m := range lines {
		seen = append(seen, m)
	}
	var sawGaveUp, sawWarning bool
	for _, m := range seen {
		sawGaveUp = sawGaveUp || m["event"] == "gave_up"
		sawWarning = sawWarning || m["event"] == "log" && m["level"] == "warn" && m["message"] == skills.GaveUpMessage
	}
	if !sawGaveUp || !sawWarning {
		t.Fatalf("gave_up event %v, warning %v in %v", sawGaveUp, sawWarning, seen)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit code %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("driver did not exit after close")
	}
	inW.Close()
}

// The start reply carries every refusal with its code, holder and advice;
// an error that is no verdict (the client stopped) fails the command.
func TestStartVerdict(t *testing.T) {
	held := &skills.RejectedError{Kind: "skill", Name: "a/x", Code: "FORBIDDEN", Message: "held",
		Holder: &skills.Holder{WorkerID: "w1", WorkerName: "other"}, Advice: "stop it"}
	got, err := verdict(&skills.RegistrationError{Rejected: []*skills.RejectedError{held}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"registered":false,"rejected":[{"advice":"stop it","code":"FORBIDDEN","holder":{"worker_id":"w1","worker_name":"other"},"kind":"skill","message":"held","name":"a/x","retried":true}]}`
	if string(b) != want {
		t.Fatalf("verdict %s\nwant    %s", b, want)
	}
	unnamed := &skills.RejectedError{Kind: "prompt", Name: "p", Code: "FORBIDDEN", Holder: &skills.Holder{WorkerID: "w2"}}
	bare := &skills.RejectedError{Kind: "skill", Name: "b", Code: "INVALID_ARGUMENTS"}
	got, _ = verdict(&skills.RegistrationError{Rejected: []*skills.RejectedError{unnamed, bare}})
	b, _ = json.Marshal(got)
	want = `{"registered":false,"rejected":[{"advice":"","code":"FORBIDDEN","holder":{"worker_id":"w2","worker_name":null},"kind":"prompt","message":"","name":"p","retried":true},` +
		`{"advice":"","code":"INVALID_ARGUMENTS","holder":null,"kind":"skill","message":"","name":"b","retried":false}]}`
	if string(b) != want {
		t.Fatalf("verdict %s\nwant    %s", b, want)
	}
	for _, ok := range []error{nil, fmt.Errorf("%w: x", skills.ErrGaveUp)} {
		if _, err := verdict(ok); err != nil {
			t.Fatalf("verdict(%v) failed: %v", ok, err)
		}
	}
	if _, err := verdict(errors.New("iii: invalid engine URL")); err == nil {
		t.Fatal("a stopped client gave a verdict")
	}
}
