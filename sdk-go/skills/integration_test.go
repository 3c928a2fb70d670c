package skills_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/skills"
)

// serverBin is the skills server built once by TestMain (go build of
// github.com/iii-skills/skills/server/cmd/skills in workspace mode).
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skills-sdk-go-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin, err = buildServer(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}

func buildServer(dir string) (string, error) {
	if bin := os.Getenv("SKILLS_BIN"); bin != "" {
		return bin, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "skills")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/iii-skills/skills/server/cmd/skills")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the skills server: %w\n%s", err, out)
	}
	return bin, nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type server struct {
	url  string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// startServer runs `skills --standalone` on port with dataDir and waits
// until the registry answers.
func startServer(t *testing.T, port int, dataDir string) *server {
	t.Helper()
	return startServerConfig(t, port, dataDir, filepath.Join(t.TempDir(), "absent.yaml"))
}

// startServerConfig is startServer with the config file at configPath.
func startServerConfig(t *testing.T, port int, dataDir, configPath string) *server {
	t.Helper()
	s := &server{url: fmt.Sprintf("ws://127.0.0.1:%d", port), out: &bytes.Buffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(serverBin, "--standalone", "--url", s.url, "--data", dataDir, "--mcp-addr", "",
		"--config", configPath)
	s.cmd.Stdout, s.cmd.Stderr = &lockedWriter{w: s.out}, &lockedWriter{w: s.out}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.stop)
	c := dial(t, s.url)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if _, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "skills::list", Timeout: 2 * time.Second}); err == nil {
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("skills server exited:\n%s", s.out.String())
		case <-ctx.Done():
			t.Fatalf("skills server did not come up:\n%s", s.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// newClient builds a client that reconnects quickly and starts connecting in
// the background (the engine may not exist yet).
func newClient(t *testing.T, url string) *iii.Client {
	t.Helper()
	c := iii.RegisterWorker(url, iii.WithName("sdk-go-skills-test"), iii.WithLogger(quietLogger),
		iii.WithReconnectConfig(iii.ReconnectConfig{InitialDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dial returns a connected client.
func dial(t *testing.T, url string) *iii.Client {
	t.Helper()
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	if v == nil {
		return nil // sent as {}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return b
}

func call(t *testing.T, c *iii.Client, fid string, payload any) json.RawMessage {
	t.Helper()
	res, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fid, Data: mustJSON(t, payload), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", fid, err)
	}
	return res
}

func callErr(t *testing.T, c *iii.Client, fid string, payload any) string {
	t.Helper()
	_, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fid, Data: mustJSON(t, payload), Timeout: 10 * time.Second})
	if err == nil {
		t.Fatalf("%s: expected an error", fid)
	}
	return err.Error()
}

func skillIDs(t *testing.T, c *iii.Client) []string {
	t.Helper()
	var out struct {
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(call(t, c, "skills::list", nil), &out); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(out.Skills))
	for i, s := range out.Skills {
		ids[i] = s.ID
	}
	return ids
}

type sendEmailArgs struct {
	To      string `json:"to" jsonschema:"description=Recipient address"`
	Subject string `json:"subject" jsonschema:"description=Subject line"`
	Count   int    `json:"count,omitempty" jsonschema:"description=How many drafts"`
}

// publishResend adds a small tree, a section and a prompt to p.
func publishResend(t *testing.T, p *skills.Publisher) {
	t.Helper()
	for id, md := range map[string]string{
		"resend":            "# resend\n\nEmail provider integration.\n\n- [`email`](iii://resend/email)\n",
		"resend/email":      "# resend/email\n\nEmail flows.\n\n- [`send`](iii://resend/email/send)\n",
		"resend/email/send": "# Send\n\nHow to send.\n",
	} {
		if err := p.Skill(id, md); err != nil {
			t.Fatal(err)
		}
	}
	uri, err := p.Section("resend/health", func(context.Context) (any, error) {
		return skills.Content("# Resend health\n\nAPI: ok."), nil
	})
	if err != nil || uri != "iii://fn/resend/health" {
		t.Fatalf("section: %q %v", uri, err)
	}
	if _, err := p.Section("resend/status", func(context.Context) (any, error) {
		return map[string]any{"ok": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	fid, err := skills.Prompt(p, "send-email", "Compose and send an email",
		func(_ context.Context, a sendEmailArgs) (skills.PromptResult, error) {
			return skills.Content(fmt.Sprintf("Compose %d email(s) to %s with the subject %q.", max(a.Count, 1), a.To, a.Subject)), nil
		})
	if err != nil || fid != "prompt::send-email" {
		t.Fatalf("prompt: %q %v", fid, err)
	}
}

func TestPublishSkillsSectionsAndPrompts(t *testing.T) {
	srv := startServer(t, freePort(t), t.TempDir())
	p := skills.NewPublisher(dial(t, srv.url), skills.WithLogger(quietLogger))
	publishResend(t, p)
	type echoIn struct {
		Message string `json:"message"`
	}
	type echoOut struct {
		Echo string `json:"echo"`
	}
	if err := skills.Function(p, "resend::echo", func(_ context.Context, in echoIn) (echoOut, error) {
		return echoOut{Echo: in.Message}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}

	c := dial(t, srv.url)
	if got := strings.Join(skillIDs(t, c), ","); got != "resend,resend/email,resend/email/send" {
		t.Fatalf("skills::list ids %s", got)
	}
	var text string
	if err := json.Unmarshal(call(t, c, "skill::fetch", map[string]any{"uri": "iii://resend/email/send"}), &text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "# iii://resend/email/send\n\n# Send\n\nHow to send.") {
		t.Fatalf("fetch body %q", text)
	}
	if err := json.Unmarshal(call(t, c, "skill::fetch", map[string]any{"uri": "iii://fn/resend/health"}), &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "# Resend health\n\nAPI: ok.") {
		t.Fatalf("fetch section %q", text)
	}
	if err := json.Unmarshal(call(t, c, "skill::fetch", map[string]any{"uri": "iii://fn/resend/status"}), &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "\"ok\": true") {
		t.Fatalf("JSON section %q", text)
	}

	var got struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	res := call(t, c, "prompts::mcp-get", map[string]any{"name": "send-email",
		"arguments": map[string]any{"to": "a@b.c", "subject": "Hi", "count": "2"}})
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatal(err)
	}
	if got.Description != "Compose and send an email" || len(got.Messages) != 1 ||
		got.Messages[0].Role != "user" || got.Messages[0].Content.Text != `Compose 2 email(s) to a@b.c with the subject "Hi".` {
		t.Fatalf("mcp-get %s", res)
	}
	msg := callErr(t, c, "prompts::mcp-get", map[string]any{"name": "send-email", "arguments": map[string]any{"count": "x"}})
	want := `prompt "send-email": missing required argument "to"; missing required argument "subject"; argument "count" must be an integer, got "x"`
	if !strings.Contains(msg, want) {
		t.Fatalf("mcp-get error %q; want it to contain %q", msg, want)
	}

	var listed struct {
		Prompts []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Arguments   []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Required    bool   `json:"required"`
			} `json:"arguments"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(call(t, c, "prompts::mcp-list", nil), &listed); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(listed.Prompts)
	if string(b) != `[{"name":"send-email","description":"Compose and send an email","arguments":[{"name":"to","description":"Recipient address","required":true},{"name":"subject","description":"Subject line","required":true},{"name":"count","description":"How many drafts","required":false}]}]` {
		t.Fatalf("mcp-list %s", b)
	}

	var fns struct {
		Functions []struct {
			FunctionID    string          `json:"function_id"`
			RequestFormat json.RawMessage `json:"request_format"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(call(t, c, "engine::functions::list", map[string]any{"prefix": "resend::"}), &fns); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fns.Functions {
		if f.FunctionID == "resend::echo" {
			found = strings.Contains(string(f.RequestFormat), `"message"`)
		}
		if strings.HasPrefix(f.FunctionID, "iii-skills::") {
			t.Errorf("internal function %s is listed", f.FunctionID)
		}
	}
	if !found {
		t.Fatalf("typed function not listed with its request_format: %+v", fns.Functions)
	}

	// The server refuses what the publisher refuses locally, with the same text.
	local := p.Skill("fn/x", "body")
	remote := callErr(t, c, "skills::register", map[string]any{"id": "fn/x", "skill": "body"})
	if local == nil || !strings.Contains(remote, local.Error()) {
		t.Fatalf("local %v; remote %s", local, remote)
	}

	// Close with unregister removes everything this publisher registered.
	if err := p.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if ids := skillIDs(t, c); len(ids) != 0 {
		t.Fatalf("after Close(unregister) skills::list = %v", ids)
	}
	if err := p.Skill("late", "x"); !errors.Is(err, skills.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPublisherStartedBeforeTheServer(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("ws://127.0.0.1:%d", port)
	p := skills.NewPublisher(newClient(t, url), skills.WithLogger(quietLogger),
		skills.WithBackoff(skills.Backoff{InitialDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, GiveUpAfter: 2 * time.Minute}))
	publishResend(t, p)
	result := p.StartBackground(context.Background())
	srv := startServer(t, port, t.TempDir())
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.url)
	if got := strings.Join(skillIDs(t, c), ","); got != "resend,resend/email,resend/email/send" {
		t.Fatalf("skills::list ids %s", got)
	}
	_ = p.Close(context.Background(), false)
}

func TestReRegistersAfterTheServerRestartsEmpty(t *testing.T) {
	port := freePort(t)
	srv := startServer(t, port, t.TempDir())
	registered := make(chan struct{}, 10)
	p := skills.NewPublisher(newClient(t, srv.url), skills.WithLogger(quietLogger),
		skills.WithBackoff(skills.Backoff{InitialDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond}),
		skills.WithOnRegistered(func() { registered <- struct{}{} }))
	publishResend(t, p)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-registered
	srv.stop()

	srv = startServer(t, port, t.TempDir()) // empty data dir: nothing stored
	c := dial(t, srv.url)
	waitFor(t, "the publisher to register again", func() bool { return len(skillIDs(t, c)) == 3 })
	<-registered
	res := call(t, c, "prompts::mcp-get", map[string]any{"name": "send-email", "arguments": map[string]any{"to": "x", "subject": "y"}})
	if !strings.Contains(string(res), `Compose 1 email(s) to x with the subject \"y\".`) {
		t.Fatalf("prompt after re-registration: %s", res)
	}
	_ = p.Close(context.Background(), false)
}

func TestGiveUpLogsTheWarning(t *testing.T) {
	url := fmt.Sprintf("ws://127.0.0.1:%d", freePort(t)) // nothing listens there
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf}, nil))
	gaveUp := make(chan struct{}, 1)
	p := skills.NewPublisher(newClient(t, url), skills.WithLogger(logger), skills.WithCallTimeout(50*time.Millisecond),
		skills.WithBackoff(skills.Backoff{InitialDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, GiveUpAfter: 200 * time.Millisecond}),
		skills.WithOnGaveUp(func() { gaveUp <- struct{}{} }))
	if err := p.Skill("lonely", "# lonely\n"); err != nil {
		t.Fatal(err)
	}
	err := p.Start(context.Background())
	if !errors.Is(err, skills.ErrGaveUp) {
		t.Fatalf("got %v; want ErrGaveUp", err)
	}
	<-gaveUp
	_ = p.Close(context.Background(), false)
	if !strings.Contains(buf.String(), `level=WARN msg="skills handshake gave up; install / start it and restart this worker"`) {
		t.Fatalf("log:\n%s", buf.String())
	}
}

// One id another live publisher holds blocks nothing: the items after it
// are registered, Start reports the refusal at once with its code, the
// holder's name (the one the web page shows) and advice, and the id passes
// to this publisher once the holder is gone.
func TestAHeldIDBlocksNothingAndNamesItsHolder(t *testing.T) {
	srv := startServer(t, freePort(t), t.TempDir())
	holderClient := iii.RegisterWorker(srv.url, iii.WithName("resend-holder"), iii.WithLogger(quietLogger))
	t.Cleanup(func() { _ = holderClient.Close() })
	holder := skills.NewPublisher(holderClient, skills.WithLogger(quietLogger))
	if err := holder.Skill("shared/doc", "# held\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := holder.Start(ctx); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	registered := make(chan struct{}, 4)
	p := skills.NewPublisher(dial(t, srv.url), skills.WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf}, nil))),
		skills.WithBackoff(skills.Backoff{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, GiveUpAfter: time.Minute}),
		skills.WithOnRegistered(func() { registered <- struct{}{} }))
	for _, id := range []string{"mine/first", "shared/doc", "mine/after"} {
		if err := p.Skill(id, "# "+id+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	err := p.Start(ctx)
	var rerr *skills.RegistrationError
	if !errors.As(err, &rerr) || len(rerr.Rejected) != 1 {
		t.Fatalf("Start = %v; want the one held id", err)
	}
	re := rerr.Rejected[0]
	if re.Name != "shared/doc" || re.Code != "FORBIDDEN" || !re.Retried() || re.Holder == nil ||
		re.Holder.WorkerName != "resend-holder" || re.Holder.WorkerID != holderClient.WorkerID() {
		t.Fatalf("refusal %+v (holder %+v); want FORBIDDEN held by resend-holder (%s)", re, re.Holder, holderClient.WorkerID())
	}
	wantAdvice := `stop worker "resend-holder" (` + holderClient.WorkerID() + `), which holds it, or publish under another id; this worker retries until its registration deadline`
	if re.Advice != wantAdvice {
		t.Fatalf("advice %q; want %q", re.Advice, wantAdvice)
	}
	if ids := skillIDs(t, holderClient); !slices.Contains(ids, "mine/first") || !slices.Contains(ids, "mine/after") {
		t.Fatalf("skills %v: the items around the held id must be registered", ids)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "resend-holder") {
		t.Fatalf("log:\n%s", buf.String())
	}

	// The holder leaves: the retried id passes to this publisher.
	_ = holder.Close(context.Background(), false)
	_ = holderClient.Close()
	select {
	case <-registered:
	case <-ctx.Done():
		t.Fatalf("the held id never passed to this publisher:\n%s", buf.String())
	}
	var read struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(call(t, dial(t, srv.url), "skills::resources-read", map[string]string{"uri": "iii://shared/doc"}), &read); err != nil ||
		len(read.Contents) != 1 || read.Contents[0].Text != "# shared/doc\n" {
		t.Fatalf("iii://shared/doc reads %+v, %v", read, err)
	}
	_ = p.Close(context.Background(), true)
}

// An engine URL that can never connect fails Start at once with the reason,
// instead of retrying until the deadline.
func TestAMalformedEngineURLFailsStartAtOnce(t *testing.T) {
	t.Setenv("III_URL", "http://127.0.0.1:49134")
	p := skills.NewPublisher(iii.RegisterWorker("", iii.WithLogger(quietLogger)), skills.WithLogger(quietLogger))
	if err := p.Skill("x", "# x\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := p.Start(ctx)
	want := `iii: invalid engine URL "http://127.0.0.1:49134" (from III_URL): the scheme is "http", not ws or wss; expected ws://host:port or wss://host:port`
	if err == nil || err.Error() != want {
		t.Fatalf("Start = %v; want %q", err, want)
	}
}

func TestChangeSubscriptions(t *testing.T) {
	srv := startServer(t, freePort(t), t.TempDir())
	observer := skills.NewPublisher(dial(t, srv.url), skills.WithLogger(quietLogger))
	skillEvents := make(chan skills.SkillChange, 10)
	promptEvents := make(chan skills.PromptChange, 10)
	if _, err := observer.OnSkillChange(func(_ context.Context, c skills.SkillChange) { skillEvents <- c }); err != nil {
		t.Fatal(err)
	}
	if _, err := observer.OnPromptChange(func(_ context.Context, c skills.PromptChange) { promptEvents <- c }); err != nil {
		t.Fatal(err)
	}
	// A raw subscriber sees the exact payload the registry sends.
	raw := make(chan json.RawMessage, 10)
	rc := dial(t, srv.url)
	if _, err := rc.RegisterFunction("rawobserver::on-skill", func(_ context.Context, data json.RawMessage) (any, error) {
		raw <- data
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.RegisterTrigger("rawobserver-binding", "skills::on-change", "rawobserver::on-skill", nil); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.url)
	// Trigger bindings are asynchronous: wait until the registry delivers.
	waitFor(t, "subscriptions to be active", func() bool {
		call(t, c, "skills::register", map[string]any{"id": "warmup", "skill": "x"})
		select {
		case <-skillEvents:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	waitFor(t, "the raw subscriber", func() bool {
		call(t, c, "skills::register", map[string]any{"id": "warmup", "skill": "x"})
		select {
		case <-raw:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	drainSkills(skillEvents)
	drainRaw(raw)

	p := skills.NewPublisher(c, skills.WithLogger(quietLogger))
	if err := p.Skill("demo/a", "# a\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Prompt(p, "greet", "Greet someone", func(context.Context, struct{}) (skills.PromptResult, error) {
		return skills.Text("Greet warmly."), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := next(t, skillEvents); got != (skills.SkillChange{Op: skills.OpRegister, ID: "demo/a"}) {
		t.Fatalf("skill change %+v", got)
	}
	if got := next(t, promptEvents); got != (skills.PromptChange{Op: skills.OpRegister, Name: "greet"}) {
		t.Fatalf("prompt change %+v", got)
	}
	var payload map[string]any
	if err := json.Unmarshal(next(t, raw), &payload); err != nil {
		t.Fatal(err)
	}
	delete(payload, "_caller_worker_id") // added by the engine
	if b, _ := json.Marshal(payload); string(b) != `{"id":"demo/a","op":"register"}` {
		t.Fatalf("raw payload %s", b)
	}
	if err := p.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := next(t, skillEvents); got != (skills.SkillChange{Op: skills.OpUnregister, ID: "demo/a"}) {
		t.Fatalf("skill change %+v", got)
	}
	if got := next(t, promptEvents); got != (skills.PromptChange{Op: skills.OpUnregister, Name: "greet"}) {
		t.Fatalf("prompt change %+v", got)
	}
	_ = observer.Close(context.Background(), false)
}

func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		var zero T
		return zero
	}
}

func drainSkills(ch chan skills.SkillChange) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

func drainRaw(ch chan json.RawMessage) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}
