package skills

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/ssh"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// DefaultCallTimeout bounds each registry call.
const DefaultCallTimeout = 5 * time.Second

// internalMetadata hides the publisher's own functions from tool listings.
var internalMetadata = map[string]any{"internal": true}

// Option configures a Publisher.
type Option func(*config)

type config struct {
	logger       *slog.Logger
	backoff      Backoff
	callTimeout  time.Duration
	namespace    string
	onRegistered func()
	onGaveUp     func()
	signer       ssh.Signer // signs what is registered (signing.go); nil: nothing is signed
}

// WithLogger sets where the publisher logs (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithBackoff sets the boot-time registration backoff; zero fields keep the
// defaults (DefaultBackoff).
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff = b } }

// WithCallTimeout sets the timeout of each registry call (default 5 s).
func WithCallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

// WithInternalNamespace sets the namespace of the publisher's internal
// functions (change subscriptions, watchers). Default
// "iii-skills::<random>", unique per publisher.
func WithInternalNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithNamespace is the old name of WithInternalNamespace.
//
// Deprecated: use WithInternalNamespace (the Node and Python publishers'
// name); WithNamespace is removed in the next release.
func WithNamespace(ns string) Option { return WithInternalNamespace(ns) }

// WithOnRegistered sets a func called each time a full (re-)registration
// round succeeded.
func WithOnRegistered(f func()) Option { return func(c *config) { c.onRegistered = f } }

// WithOnGaveUp sets a func called each time registration gave up at its
// deadline.
func WithOnGaveUp(f func()) Option { return func(c *config) { c.onGaveUp = f } }

// FuncOption configures a function the publisher registers (Section, Prompt,
// Function).
type FuncOption func(*funcConfig)

type funcConfig struct {
	description string
	functionID  string
	metadata    any
	// message and author describe the version a changed skill body or
	// prompt definition becomes (versions.go).
	message, author string
	// signature is a ready signature of the content (signing.go).
	signature string
}

// WithDescription sets the function's description.
func WithDescription(d string) FuncOption { return func(c *funcConfig) { c.description = d } }

// WithFunctionID sets the id of a prompt's handler function (default
// "prompt::{name}"). Ignored by Section and Function.
func WithFunctionID(id string) FuncOption { return func(c *funcConfig) { c.functionID = id } }

// WithMetadata sets the function's metadata.
func WithMetadata(m any) FuncOption { return func(c *funcConfig) { c.metadata = m } }

func funcOptions(opts []FuncOption) funcConfig {
	var c funcConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

type registryState int

const (
	registryUnknown registryState = iota
	registryPresent
	registryAbsent
)

// Publisher publishes skills, section functions and prompts to the skills
// registry through an iii client, keeps them registered across engine
// reconnects and registry restarts, and delivers registry change events.
// All methods are safe for concurrent use.
type Publisher struct {
	c   *iii.Client
	cfg config
	log *slog.Logger
	reg *registrar
	ns  string

	mu          sync.Mutex
	closed      bool
	started     bool
	prompts     map[string]*iii.FunctionRef
	funcs       []*iii.FunctionRef
	subs        map[uint64]func()
	subSeq      uint64
	cleanups    []func()
	connections int
	registry    registryState
}

// NewPublisher creates a publisher on client. The client may be connected
// before or after; the publisher never dials or closes it.
func NewPublisher(client *iii.Client, opts ...Option) *Publisher {
	cfg := config{callTimeout: DefaultCallTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.callTimeout <= 0 {
		cfg.callTimeout = DefaultCallTimeout
	}
	cfg.backoff = cfg.backoff.withDefaults()
	if cfg.namespace == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.namespace = "iii-skills::" + hex.EncodeToString(b[:])
	}
	p := &Publisher{c: client, cfg: cfg, log: cfg.logger, ns: cfg.namespace,
		prompts: map[string]*iii.FunctionRef{}, subs: map[uint64]func(){}}
	p.reg = newRegistrar(cfg.logger, cfg.backoff, p.register)
	p.reg.onRegistered = cfg.onRegistered
	p.reg.onGaveUp = cfg.onGaveUp
	p.reg.onAbsent = func() { p.setRegistry(registryAbsent) }
	return p
}

func (p *Publisher) register(ctx context.Context, it item) error {
	_, err := p.trigger(ctx, it.functionID, it.payload)
	return err
}

func (p *Publisher) trigger(ctx context.Context, fid string, payload any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.callTimeout)
	defer cancel()
	if payload == nil {
		payload = struct{}{} // sent as {}, like an absent payload
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode the %s payload: %w", fid, err)
	}
	return p.c.Trigger(ctx, iii.TriggerRequest{FunctionID: fid, Data: data, Timeout: p.cfg.callTimeout})
}

func (p *Publisher) checkOpen() error {
	if p.closed {
		return ErrClosed
	}
	return nil
}

// Skill adds a skill: markdown served at iii://{id} (ids nest:
// "resend/email/send"). It is checked here with the registry's rules and
// fails with a *ValidationError carrying the registry's message. Adding an
// id again replaces its body. Skills are registered by Start, and at once
// when added after it.
//
// WithMessage and WithAuthor describe the version a changed body becomes
// in the registry's history; WithSignature sends a signature of the body
// made elsewhere. With WithSigner the body is signed here, once (a
// signing failure is returned). Other options are ignored here.
func (p *Publisher) Skill(id, markdown string, opts ...FuncOption) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := ValidateSkillID(id); err != nil {
		return err
	}
	if err := ValidateSkillBody(markdown); err != nil {
		return err
	}
	o := funcOptions(opts)
	payload := map[string]string{"id": id, "skill": markdown}
	versionMeta(payload, o)
	sig, err := p.signatureFor(o.signature, markdown)
	if err != nil {
		return err
	}
	if sig != "" {
		payload["signature"] = sig
	}
	p.reg.upsert(item{key: "skill:" + id, kind: "skill", name: id, functionID: rules.FnSkillsRegister, payload: payload})
	return nil
}

// SetBackoff replaces the registration backoff (zero fields take the
// defaults). It must come before Start; afterwards it fails.
func (p *Publisher) SetBackoff(b Backoff) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return err
	}
	if p.started {
		return errors.New("skills: SetBackoff must come before Start")
	}
	p.reg.setBackoff(b.withDefaults())
	return nil
}

// SectionFunc produces the content of a section URI. Return a string
// (markdown), Content(s) / Text(s), or any JSON value (served as pretty JSON).
type SectionFunc func(ctx context.Context) (any, error)

// Section registers the function behind the section URI iii://fn/{path}
// ("a/b/c" is function "a::b::c") and returns that URI. The registry calls
// it with {} whenever the URI is read.
func (p *Publisher) Section(path string, handler SectionFunc, opts ...FuncOption) (string, error) {
	if handler == nil {
		return "", errors.New("skills: section handler is nil")
	}
	fid, err := SectionFunctionID(path)
	if err != nil {
		return "", err
	}
	o := funcOptions(opts)
	if o.description == "" {
		o.description = "Skill section iii://fn/" + path
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return "", err
	}
	ref, err := p.c.RegisterFunction(fid, func(ctx context.Context, _ json.RawMessage) (any, error) {
		res, err := handler(ctx)
		if err != nil {
			return nil, err
		}
		if r, ok := res.(PromptResult); ok && r.IsZero() {
			return nil, fmt.Errorf("section iii://fn/%s: %w", path, errEmptyResult)
		}
		return res, nil
	}, iii.RegisterFunctionOptions{Description: o.description, Metadata: o.metadata})
	if err != nil {
		return "", err
	}
	p.funcs = append(p.funcs, ref)
	return "iii://fn/" + path, nil
}

// PromptFunc renders a prompt from its typed arguments.
type PromptFunc[Args any] func(ctx context.Context, args Args) (PromptResult, error)

// Prompt adds a slash-command prompt. It registers the handler function
// (default id "prompt::{name}", see WithFunctionID) and the prompt itself
// with prompts::register. The argument list is derived from Args, a struct:
// the json name, the description from `jsonschema:"description=…"` or
// `jsonschema_description:"…"`, required unless the field is a pointer or
// omitempty. Before the handler runs, the arguments are checked and MCP's
// strings converted ("42" → 42, "true" → true); problems fail the call with
// the messages of docs/publishers.md. Defining a name again replaces the
// prompt. It returns the handler's function id. With WithSigner the
// prompt's canonical JSON (rules.CanonicalPrompt) is signed; WithSignature
// sends a signature of it made elsewhere.
func Prompt[Args any](p *Publisher, name, description string, handler PromptFunc[Args], opts ...FuncOption) (string, error) {
	if handler == nil {
		return "", errors.New("skills: prompt handler is nil")
	}
	t := reflect.TypeFor[Args]()
	specs, err := deriveArguments(t)
	if err != nil {
		return "", err
	}
	args := make([]PromptArgument, len(specs))
	for i, s := range specs {
		args[i] = s.PromptArgument
	}
	o := funcOptions(opts)
	fid := o.functionID
	if fid == "" {
		fid = "prompt::" + name
	}
	if err := ValidatePrompt(name, description, fid, args); err != nil {
		return "", err
	}
	schema, err := iii.SchemaFor(t)
	if err != nil {
		return "", err
	}
	fnDescription := o.description
	if fnDescription == "" {
		fnDescription = "Render the /" + name + " prompt: " + description
	}
	sig, err := p.signatureFor(o.signature, promptContent(description, fid, args))
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return "", err
	}
	if old := p.prompts[name]; old != nil {
		_ = old.Unregister()
		delete(p.prompts, name)
	}
	ref, err := p.c.RegisterFunction(fid, func(ctx context.Context, data json.RawMessage) (any, error) {
		var a Args
		if err := decodeArguments(name, specs, data, &a); err != nil {
			return nil, err
		}
		res, err := handler(ctx, a)
		if err != nil {
			return nil, err
		}
		if res.IsZero() {
			return nil, fmt.Errorf("prompt %s: %w", jsonQuote(name), errEmptyResult)
		}
		return res, nil
	}, iii.RegisterFunctionOptions{Description: fnDescription, RequestFormat: schema, Metadata: o.metadata})
	if err != nil {
		return "", err
	}
	p.prompts[name] = ref
	payload := map[string]any{"name": name, "description": description, "arguments": args, "function_id": fid}
	versionMeta(payload, o)
	if sig != "" {
		payload["signature"] = sig
	}
	p.reg.upsert(item{key: "prompt:" + name, kind: "prompt", name: name, functionID: rules.FnPromptsRegister, payload: payload})
	return fid, nil
}

// Function registers a typed function whose request_format and
// response_format JSON Schemas are reflected from Req and Resp, so
// engine::functions::list shows its contract (see iii.RegisterFunctionTyped).
// It is unregistered by Close.
func Function[Req, Resp any](p *Publisher, id string, handler func(ctx context.Context, req Req) (Resp, error), opts ...FuncOption) error {
	o := funcOptions(opts)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return err
	}
	ref, err := iii.RegisterFunctionTyped(p.c, id, handler, iii.RegisterFunctionOptions{Description: o.description, Metadata: o.metadata})
	if err != nil {
		return err
	}
	p.funcs = append(p.funcs, ref)
	return nil
}

// ChangeOp is the kind of a registry mutation.
type ChangeOp string

// The two change operations.
const (
	OpRegister   ChangeOp = "register"
	OpUnregister ChangeOp = "unregister"
)

// SkillChange is a skills::on-change event.
type SkillChange struct {
	Op ChangeOp `json:"op"`
	ID string   `json:"id"`
}

// PromptChange is a prompts::on-change event.
type PromptChange struct {
	Op   ChangeOp `json:"op"`
	Name string   `json:"name"`
}

// OnSkillChange calls h for every skills::on-change event. The returned func
// ends the subscription.
func (p *Publisher) OnSkillChange(h func(ctx context.Context, change SkillChange)) (unsubscribe func(), err error) {
	return subscribe(p, rules.TriggerSkillsOnChange, "on-skill-change", func(c SkillChange) bool { return c.ID != "" }, h)
}

// OnPromptChange calls h for every prompts::on-change event. The returned
// func ends the subscription.
func (p *Publisher) OnPromptChange(h func(ctx context.Context, change PromptChange)) (unsubscribe func(), err error) {
	return subscribe(p, rules.TriggerPromptsOnChange, "on-prompt-change", func(c PromptChange) bool { return c.Name != "" }, h)
}

func subscribe[E interface{ SkillChange | PromptChange }](p *Publisher, triggerType, label string, valid func(E) bool, h func(context.Context, E)) (func(), error) {
	if h == nil {
		return nil, errors.New("skills: change handler is nil")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	p.subSeq++
	seq := p.subSeq
	fid := fmt.Sprintf("%s::%s::%d", p.ns, label, seq)
	fn, err := p.c.RegisterFunction(fid, func(ctx context.Context, data json.RawMessage) (any, error) {
		var change E
		if err := json.Unmarshal(data, &change); err != nil || !validOp(change) || !valid(change) {
			p.log.Warn(fmt.Sprintf("ignoring malformed %s event: %s", triggerType, rawText(data)))
			return nil, nil
		}
		h(ctx, change)
		return nil, nil
	}, iii.RegisterFunctionOptions{Description: "iii-skills: " + triggerType + " subscription", Metadata: internalMetadata})
	if err != nil {
		return nil, err
	}
	tid := uuid.NewString()
	if err := p.c.RegisterTrigger(tid, triggerType, fid, nil); err != nil {
		_ = fn.Unregister()
		return nil, err
	}
	var once sync.Once
	undo := func() {
		once.Do(func() {
			_ = p.c.UnregisterTrigger(tid)
			_ = fn.Unregister()
		})
	}
	p.subs[seq] = undo
	return func() {
		p.mu.Lock()
		delete(p.subs, seq)
		p.mu.Unlock()
		undo()
	}, nil
}

func validOp[E interface{ SkillChange | PromptChange }](e E) bool {
	var op ChangeOp
	switch c := any(e).(type) {
	case SkillChange:
		op = c.Op
	case PromptChange:
		op = c.Op
	}
	return op == OpRegister || op == OpUnregister
}

// Start registers every skill and prompt, in the order they were added, and
// waits for the outcome:
//
//   - nil once the registry accepted everything;
//   - a *RegistrationError when it refused items: every refusal of the first
//     round (each a *RejectedError with its code, the holder of an id another
//     worker holds, and advice), reported once every other item of that
//     round is registered; one refused id never keeps the others from being
//     registered. Permanent refusals are not retried; ids another worker
//     holds are retried until the deadline;
//   - an error matching ErrGaveUp, with the last cause, when the deadline of
//     the backoff passed first (GaveUpMessage is logged when the registry
//     was absent or did not answer; a message naming the held items when
//     other workers hold what is missing);
//   - the client's error at once when it stopped for good (an engine URL that
//     cannot be an engine's: iii.EngineURL), or ctx's error when ctx ends.
//
// It never panics or exits the process.
//
// Registration goes on in the background after Start returns, whatever the
// outcome, until Close: everything is registered again when the client's
// engine connection is re-established and when the registry's
// skills::register appears again after having been absent
// (engine::functions-available). Calling Start again waits for the same
// first outcome. To not block boot at all, use StartBackground or run
// Start in a goroutine.
//
// Start also starts the client's connection when it was built with iii.New
// (iii.RegisterWorker already connects), so no separate Connect is needed.
func (p *Publisher) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	if !p.started {
		p.started = true
		if err := p.watchLocked(); err != nil {
			p.mu.Unlock()
			return err
		}
	}
	p.mu.Unlock()
	// Connect only starts the loop here; its wait ends with ctx or Close.
	// A client that stopped for good never registers anything: say why.
	stopped := make(chan error, 1)
	go func() {
		if err := p.c.Connect(ctx); err != nil && p.c.FatalError() != nil {
			stopped <- err
		}
	}()
	done := p.reg.start()
	select {
	case <-done:
		return p.reg.firstErr
	case err := <-stopped:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StartBackground runs Start on its own goroutine and delivers its result on
// the returned channel (buffered; reading it is optional).
func (p *Publisher) StartBackground(ctx context.Context) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.Start(ctx) }()
	return ch
}

// watchLocked installs reconnect and registry-return detection.
func (p *Publisher) watchLocked() error {
	wasConnected := p.c.Connected()
	remove := p.c.OnConnect(func(context.Context) {
		p.mu.Lock()
		p.connections++
		n := p.connections
		p.mu.Unlock()
		// The first call is the connection current at Start, or the first
		// connection made after it (retry what is pending now); every
		// later one may follow an engine restart with empty state.
		switch {
		case n > 1:
			p.reg.requestAll("engine connection re-established")
		case !wasConnected:
			p.reg.nudge()
		}
	})
	p.cleanups = append(p.cleanups, remove)

	fid := p.ns + "::functions-available"
	fn, err := p.c.RegisterFunction(fid, p.functionsAvailable,
		iii.RegisterFunctionOptions{Description: "iii-skills: watches for the skills registry", Metadata: internalMetadata})
	if err != nil {
		return err
	}
	tid := uuid.NewString()
	if err := p.c.RegisterTrigger(tid, iii.TriggerFunctionsAvailable, fid, nil); err != nil {
		_ = fn.Unregister()
		return err
	}
	p.cleanups = append(p.cleanups, func() { _ = p.c.UnregisterTrigger(tid); _ = fn.Unregister() })
	return nil
}

// functionsAvailable handles engine::functions-available events
// ({"event":"functions_changed","functions":[{function_id,…}…]}).
func (p *Publisher) functionsAvailable(ctx context.Context, data json.RawMessage) (any, error) {
	var ev struct {
		Functions *[]struct {
			FunctionID string `json:"function_id"`
		} `json:"functions"`
	}
	_ = json.Unmarshal(data, &ev)
	if ev.Functions == nil {
		// No list in the event: ask the engine.
		res, err := p.trigger(ctx, iii.FnListFunctions, map[string]any{"prefix": "skills::"})
		if err != nil {
			p.log.Debug(iii.FnListFunctions+" failed", "error", err)
			return nil, nil
		}
		_ = json.Unmarshal(res, &ev)
		if ev.Functions == nil {
			return nil, nil
		}
	}
	state := registryAbsent
	for _, f := range *ev.Functions {
		if f.FunctionID == rules.FnSkillsRegister {
			state = registryPresent
			break
		}
	}
	if p.setRegistry(state) == registryAbsent && state == registryPresent {
		p.reg.requestAll("skills registry is available again")
	}
	return nil, nil
}

// setRegistry records whether the registry is present and returns what was
// known before.
func (p *Publisher) setRegistry(s registryState) registryState {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.registry
	p.registry = s
	return was
}

// Close stops retrying; with unregister it also removes this publisher's
// skills and prompts from the registry (skills::unregister /
// prompts::unregister, for everything the registry accepted); then it
// unregisters the publisher's functions and triggers. The iii client stays
// open. Close is idempotent; the error reports failed unregister calls.
func (p *Publisher) Close(ctx context.Context, unregister bool) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.reg.close()

	var errs []error
	if unregister {
		for _, it := range p.reg.acceptedItems() {
			fid, payload := rules.FnSkillsUnregister, any(map[string]string{"id": it.name})
			if it.kind == "prompt" {
				fid, payload = rules.FnPromptsUnregister, map[string]string{"name": it.name}
			}
			if _, err := p.trigger(ctx, fid, payload); err != nil {
				p.log.Warn(fmt.Sprintf("could not unregister %s: %v", it.label(), err))
				errs = append(errs, fmt.Errorf("unregister %s: %w", it.label(), err))
			}
		}
	}

	p.mu.Lock()
	refs := append([]*iii.FunctionRef(nil), p.funcs...)
	for _, r := range p.prompts {
		refs = append(refs, r)
	}
	subs := make([]func(), 0, len(p.subs))
	for _, u := range p.subs {
		subs = append(subs, u)
	}
	cleanups := p.cleanups
	p.funcs, p.prompts, p.subs, p.cleanups = nil, map[string]*iii.FunctionRef{}, map[uint64]func(){}, nil
	p.mu.Unlock()
	for _, u := range subs {
		u()
	}
	for _, c := range cleanups {
		c()
	}
	for _, r := range refs {
		_ = r.Unregister()
	}
	return errors.Join(errs...)
}
