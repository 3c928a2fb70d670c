// Command driver is the Go publisher's conformance driver
// (conformance/DRIVER.md): one JSON command per line on stdin, one JSON reply
// or event per line on stdout; everything else goes to stderr.
//
//	III_URL=ws://127.0.0.1:49134 go run ./sdk-go/skills/internal/driver
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/skills"
)

func main() {
	// "": the client reads III_URL, else iii.DefaultEngineURL; an address
	// that cannot be an engine's fails start at once (iii.EngineURL).
	os.Exit(run("", os.Stdin, os.Stdout, os.Stderr))
}

// out serializes protocol lines on stdout.
type out struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *out) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"event": "log", "level": "error", "message": "driver: encode: " + err.Error()})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.w.Write(append(b, '\n'))
}

// eventHandler turns the publisher's log records into log events.
type eventHandler struct{ o *out }

func (h eventHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h eventHandler) Handle(_ context.Context, r slog.Record) error {
	level := "info"
	switch {
	case r.Level >= slog.LevelError:
		level = "error"
	case r.Level >= slog.LevelWarn:
		level = "warn"
	case r.Level < slog.LevelInfo:
		level = "debug"
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	})
	h.o.emit(map[string]any{"event": "log", "level": level, "message": msg})
	return nil
}
func (h eventHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h eventHandler) WithGroup(string) slog.Handler      { return h }

type driver struct {
	o       *out
	client  *iii.Client
	pub     *skills.Publisher // made by the first command that needs it (publisher)
	backoff skills.Backoff
	signer  ssh.Signer // configure signing_key
	pending sync.WaitGroup
}

// publisher is the driver's publisher, made with what configure set.
func (d *driver) publisher() *skills.Publisher {
	if d.pub == nil {
		opts := []skills.Option{
			skills.WithLogger(slog.New(eventHandler{d.o})),
			skills.WithOnRegistered(func() { d.o.emit(map[string]any{"event": "registered"}) }),
			skills.WithOnGaveUp(func() { d.o.emit(map[string]any{"event": "gave_up"}) }),
			skills.WithBackoff(d.backoff),
		}
		if d.signer != nil {
			opts = append(opts, skills.WithSigner(d.signer))
		}
		d.pub = skills.NewPublisher(d.client, opts...)
	}
	return d.pub
}

func run(url string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &out{w: stdout}
	client := iii.RegisterWorker(url,
		iii.WithName(fmt.Sprintf("iii-skills-go-driver:%d", os.Getpid())),
		iii.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		iii.WithReconnectConfig(iii.ReconnectConfig{InitialDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}))
	d := &driver{o: o, client: client}

	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if d.handle(line) {
			break
		}
	}
	d.shutdown(false)
	return 0
}

func (d *driver) shutdown(unregister bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d.pub != nil {
		_ = d.pub.Close(ctx, unregister)
	}
	d.pending.Wait()
	_ = d.client.Close()
}

// command is one decoded command line.
type command struct {
	id   json.RawMessage
	cmd  string
	args map[string]json.RawMessage
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result any             `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// handle runs one command and reports whether the driver should exit.
func (d *driver) handle(line string) (exit bool) {
	c, err := decodeCommand(line)
	if err != nil {
		// The frame id when the line got that far, so the suite can match the reply.
		id := c.id
		if id == nil {
			id = json.RawMessage("null")
		}
		d.o.emit(reply{ID: id, OK: false, Error: "bad command line: " + err.Error()})
		return false
	}
	respond := func(result any, err error) {
		if err != nil {
			d.o.emit(reply{ID: c.id, OK: false, Error: err.Error()})
			return
		}
		d.o.emit(map[string]any{"id": c.id, "ok": true, "result": result})
	}
	switch c.cmd {
	case "start":
		wait, err := c.boolArg("wait", true)
		if err != nil {
			respond(nil, err)
			return false
		}
		done := d.publisher().StartBackground(context.Background())
		if !wait {
			respond(nil, nil)
			return false
		}
		d.pending.Add(1)
		go func() {
			defer d.pending.Done()
			respond(verdict(<-done))
		}()
		return false
	case "close":
		unregister, err := c.boolArg("unregister", false)
		if err != nil {
			respond(nil, err)
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = d.publisher().Close(ctx, unregister)
		cancel()
		d.pending.Wait()
		if err != nil {
			respond(nil, err)
		} else {
			respond(nil, nil)
		}
		return true
	}
	result, err := d.execute(c)
	respond(result, err)
	return false
}

// verdict is the start reply (DRIVER.md): registered, and every refusal
// of the first round with its code, holder and advice. Errors that are no
// verdict (the client stopped: a malformed engine URL) fail the command.
func verdict(err error) (any, error) {
	rejected := []map[string]any{}
	var rerr *skills.RegistrationError
	switch {
	case err == nil:
		return map[string]any{"registered": true, "rejected": rejected}, nil
	case errors.As(err, &rerr):
		for _, r := range rerr.Rejected {
			var holder any // null when the refusal names no holder
			if h := r.Holder; h != nil {
				var name any // null when the registry names only the id
				if h.WorkerName != "" {
					name = h.WorkerName
				}
				holder = map[string]any{"worker_id": h.WorkerID, "worker_name": name}
			}
			rejected = append(rejected, map[string]any{"kind": r.Kind, "name": r.Name, "code": r.Code,
				"message": r.Message, "holder": holder, "advice": r.Advice, "retried": r.Retried()})
		}
	case !errors.Is(err, skills.ErrGaveUp):
		return nil, err
	}
	return map[string]any{"registered": false, "rejected": rejected}, nil
}

func (d *driver) execute(c command) (any, error) {
	switch c.cmd {
	case "hello":
		return map[string]any{"sdk": "go", "version": skills.Version}, nil
	case "configure":
		return nil, d.configure(c)
	case "skill":
		id, err := c.stringArg("skill_id")
		if err != nil {
			return nil, err
		}
		md, err := c.stringArg("markdown")
		if err != nil {
			return nil, err
		}
		sig, err := c.optionalString("signature")
		if err != nil {
			return nil, err
		}
		var opts []skills.FuncOption
		if sig != "" {
			opts = append(opts, skills.WithSignature(sig))
		}
		return nil, d.publisher().Skill(id, md, opts...)
	case "section":
		path, err := c.stringArg("path")
		if err != nil {
			return nil, err
		}
		output := c.args["output"]
		if output == nil {
			output = json.RawMessage("null")
		}
		uri, err := d.publisher().Section(path, func(context.Context) (any, error) { return output, nil })
		if err != nil {
			return nil, err
		}
		return map[string]string{"uri": uri}, nil
	case "prompt":
		fixture, err := c.stringArg("fixture")
		if err != nil {
			return nil, err
		}
		name := fixture
		if raw, ok := c.args["name"]; ok && string(raw) != "null" {
			if name, err = c.stringArg("name"); err != nil {
				return nil, err
			}
		}
		sig, err := c.optionalString("signature")
		if err != nil {
			return nil, err
		}
		var opts []skills.FuncOption
		if sig != "" {
			opts = append(opts, skills.WithSignature(sig))
		}
		fid, err := definePrompt(d.publisher(), fixture, name, opts...)
		if err != nil {
			return nil, err
		}
		return map[string]string{"function_id": fid}, nil
	case "function":
		fixture, err := c.stringArg("fixture")
		if err != nil {
			return nil, err
		}
		id, err := c.stringArg("function_id")
		if err != nil {
			return nil, err
		}
		return nil, defineFunction(d.publisher(), fixture, id)
	case "subscribe":
		kind, err := c.stringArg("kind")
		if err != nil {
			return nil, err
		}
		switch kind {
		case "skills":
			_, err = d.publisher().OnSkillChange(func(_ context.Context, ch skills.SkillChange) {
				d.o.emit(map[string]any{"event": "skill_change", "op": ch.Op, "id": ch.ID})
			})
		case "prompts":
			_, err = d.publisher().OnPromptChange(func(_ context.Context, ch skills.PromptChange) {
				d.o.emit(map[string]any{"event": "prompt_change", "op": ch.Op, "name": ch.Name})
			})
		default:
			err = fmt.Errorf(`subscribe: kind must be "skills" or "prompts", got %q`, kind)
		}
		return nil, err
	}
	return nil, fmt.Errorf("unknown command %q", c.cmd)
}

func (d *driver) configure(c command) error {
	if raw, ok := c.args["signing_key"]; ok && string(raw) != "null" {
		if d.pub != nil {
			return errors.New("configure: signing_key must come before every other command")
		}
		path, err := c.stringArg("signing_key")
		if err != nil {
			return err
		}
		if d.signer, err = skills.LoadSigningKey(path); err != nil {
			return err
		}
	}
	raw, ok := c.args["backoff"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var b map[string]json.RawMessage
	if err := json.Unmarshal(raw, &b); err != nil {
		return errors.New("configure: backoff must be an object")
	}
	next := d.backoff
	for key, v := range b {
		var n float64
		if err := json.Unmarshal(v, &n); err != nil || n < 0 {
			return fmt.Errorf("configure: backoff.%s must be a number >= 0", key)
		}
		ms := time.Duration(n * float64(time.Millisecond))
		switch key {
		case "initial_ms":
			next.InitialDelay = ms
		case "multiplier":
			if n < 1 {
				return fmt.Errorf("configure: backoff.multiplier must be >= 1, got %v", n)
			}
			next.Multiplier = n
		case "max_ms":
			next.MaxDelay = ms
		case "give_up_ms":
			next.GiveUpAfter = ms
		default:
			return fmt.Errorf("configure: unknown backoff setting %s", key)
		}
	}
	if d.pub != nil {
		if err := d.pub.SetBackoff(next); err != nil {
			return fmt.Errorf("configure must come before start: %w", err)
		}
	}
	d.backoff = next
	return nil
}

func (c command) stringArg(key string) (string, error) {
	raw, ok := c.args[key]
	if !ok {
		return "", fmt.Errorf("%s: missing argument %q (a string)", c.cmd, key)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: argument %q must be a string, got %s", c.cmd, key, raw)
	}
	return s, nil
}

// optionalString is an optional string argument ("" when absent or null).
func (c command) optionalString(key string) (string, error) {
	if raw, ok := c.args[key]; !ok || string(raw) == "null" {
		return "", nil
	}
	return c.stringArg(key)
}

func (c command) boolArg(key string, def bool) (bool, error) {
	raw, ok := c.args[key]
	if !ok || string(raw) == "null" {
		return def, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, fmt.Errorf("%s: argument %q must be a boolean, got %s", c.cmd, key, raw)
	}
	return b, nil
}

// decodeCommand decodes one command line with plain JSON decoding: "id" is
// the frame id and "cmd" the command; every other key is an argument (the
// skill and function ids are "skill_id" and "function_id", never "id").
func decodeCommand(line string) (command, error) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal([]byte(line), &fields)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) || err == nil && fields == nil { // an array, a string, null …
		return command{}, errors.New("a command must be a JSON object")
	}
	if err != nil {
		return command{}, err
	}
	c := command{id: fields["id"], args: fields}
	if c.id == nil {
		c.id = json.RawMessage("null")
	}
	raw, ok := fields["cmd"]
	delete(fields, "id")
	delete(fields, "cmd")
	if !ok {
		return c, errors.New(`missing "cmd" (the command name, a string)`)
	}
	if json.Unmarshal(raw, &c.cmd) != nil {
		return c, fmt.Errorf(`"cmd" must be a string, got %s`, raw)
	}
	return c, nil
}
