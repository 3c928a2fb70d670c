package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// RemoteOptions tune a Remote.
type RemoteOptions struct {
	// Timeout bounds every call (default 30 s).
	Timeout time.Duration
	// RetryAfter is how long an idempotent read (listings, skill and index
	// reads) waits for its first answer before it is sent once more with
	// the rest of Timeout (default 2 s, negative: never). The real iii
	// engine (0.22–0.23) drops about one result in 10 000 from a worker
	// that answers within microseconds; the retry turns that hang into a
	// short delay. Section reads, prompt renders and writes run
	// publishers' handlers or change state and are never sent twice.
	RetryAfter time.Duration
	// PageBytes, when set, asks for catalog listings cut at about that
	// many bytes instead of 4 MiB (at least one skill per answer).
	PageBytes int
	// ChunkBytes, when set, asks for catalog files in chunks of that many
	// bytes instead of 4 MiB.
	ChunkBytes int
	Logger     *slog.Logger
}

// Client is what Remote needs of an iii client (*iii.Client): calls, and
// for Watch, functions of its own bound to trigger types.
type Client interface {
	Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error)
	RegisterFunction(id string, h iii.Handler, opts ...iii.RegisterFunctionOptions) (*iii.FunctionRef, error)
	RegisterTrigger(id, triggerType, functionID string, config json.RawMessage, metadata ...json.RawMessage) error
	UnregisterTrigger(id string) error
}

// Remote is a Registry in another process, reached over iii through the
// registry's functions (ours or upstream's v0.2.2: what an upstream
// registry lacks reads as empty or function_not_found). Writes are made
// as this client's connection: the engine stamps it, whatever Caller says.
type Remote struct {
	client Client
	call   invoke.Caller
	opts   RemoteOptions
	log    *slog.Logger
}

// NewRemote reads the registry that client's engine runs.
func NewRemote(client Client, o RemoteOptions) *Remote {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Remote{client: client, opts: o, log: o.Logger,
		call: invoke.Caller{Client: client, Timeout: o.Timeout, RetryAfter: max(o.RetryAfter, 0)}}
}

var _ Registry = (*Remote)(nil)

// ListSkills implements Registry.
func (r *Remote) ListSkills(ctx context.Context) (SkillList, error) {
	var out SkillList
	return out, r.call.Read(ctx, rules.FnSkillsList, nil, &out)
}

// Resources implements Registry.
func (r *Remote) Resources(ctx context.Context) (Resources, error) {
	var out Resources
	return out, r.call.Read(ctx, rules.FnSkillsResourcesList, nil, &out)
}

// Templates implements Registry.
func (r *Remote) Templates(ctx context.Context) (registry.ResourceTemplates, error) {
	var out registry.ResourceTemplates
	return out, r.call.Read(ctx, rules.FnSkillsResourcesTemplates, nil, &out)
}

// Read implements Registry: a section (iii://fn/…) runs a publisher's
// handler, which is not known to be idempotent, so only skill and index
// reads are sent again when unanswered.
func (r *Remote) Read(ctx context.Context, uri string) (registry.ReadResult, error) {
	var out registry.ReadResult
	send := r.call.Read
	if strings.HasPrefix(uri, registry.Scheme+"fn/") {
		send = r.call.Call
	}
	return out, send(ctx, rules.FnSkillsResourcesRead, map[string]string{"uri": uri}, &out)
}

// Fetch implements Registry.
func (r *Remote) Fetch(ctx context.Context, in registry.FetchInput) (string, error) {
	payload := map[string]any{}
	if in.URI != nil {
		payload["uri"] = *in.URI
	}
	if in.URIs != nil {
		payload["uris"] = in.URIs
	}
	var out string
	return out, r.call.Call(ctx, rules.FnSkillFetch, payload, &out)
}

// Search implements Registry.
func (r *Remote) Search(ctx context.Context, in SearchInput) (SearchOutput, error) {
	payload := map[string]any{"query": in.Query, "limit": in.Limit}
	if in.Namespace != "" {
		payload["namespace"] = in.Namespace
	}
	var out SearchOutput
	return out, r.call.Read(ctx, rules.FnSkillsSearch, payload, &out)
}

// RegisterSkill implements Registry.
func (r *Remote) RegisterSkill(ctx context.Context, _ Caller, in registry.RegisterSkillInput) (registry.RegisterSkillOutput, error) {
	payload := withVersionMeta(map[string]any{"id": in.ID, "skill": in.Skill}, in.Message, in.Author)
	if in.Signature != "" {
		payload["signature"] = in.Signature
	}
	var out registry.RegisterSkillOutput
	return out, r.call.Call(ctx, rules.FnSkillsRegister, payload, &out)
}

// withVersionMeta adds a registration's optional message and author (what
// the version it makes records) to payload.
func withVersionMeta(payload map[string]any, message, author string) map[string]any {
	if message != "" {
		payload["message"] = message
	}
	if author != "" {
		payload["author"] = author
	}
	return payload
}

// UnregisterSkill implements Registry.
func (r *Remote) UnregisterSkill(ctx context.Context, _ Caller, id string) (registry.UnregisterSkillOutput, error) {
	var out registry.UnregisterSkillOutput
	return out, r.call.Call(ctx, rules.FnSkillsUnregister, map[string]string{"id": id}, &out)
}

// RegisterPrompt implements Registry.
func (r *Remote) RegisterPrompt(ctx context.Context, _ Caller, in registry.RegisterPromptInput) (registry.RegisterPromptOutput, error) {
	payload := map[string]any{"name": in.Name, "description": in.Description, "function_id": in.FunctionID}
	if in.Arguments != nil {
		payload["arguments"] = in.Arguments
	}
	if in.Signature != "" {
		payload["signature"] = in.Signature
	}
	var out registry.RegisterPromptOutput
	return out, r.call.Call(ctx, rules.FnPromptsRegister, withVersionMeta(payload, in.Message, in.Author), &out)
}

// UnregisterPrompt implements Registry.
func (r *Remote) UnregisterPrompt(ctx context.Context, _ Caller, name string) (registry.UnregisterPromptOutput, error) {
	var out registry.UnregisterPromptOutput
	return out, r.call.Call(ctx, rules.FnPromptsUnregister, map[string]string{"name": name}, &out)
}

// ListPrompts implements Registry.
func (r *Remote) ListPrompts(ctx context.Context) (registry.PromptList, error) {
	var out registry.PromptList
	return out, r.call.Read(ctx, rules.FnPromptsList, nil, &out)
}

// PromptHandlers implements Registry: a registry in another process does
// not tell where its prompts' handlers are (nil: every prompt counts as
// available; a render answers the registry's error naming where the
// handler is).
func (r *Remote) PromptHandlers(context.Context) (map[string]PromptHandler, error) { return nil, nil }

// MCPPrompts implements Registry.
func (r *Remote) MCPPrompts(ctx context.Context) (registry.MCPPromptList, error) {
	var out registry.MCPPromptList
	return out, r.call.Read(ctx, rules.FnPromptsMCPList, nil, &out)
}

// GetPrompt implements Registry (a handler runs: never sent twice).
func (r *Remote) GetPrompt(ctx context.Context, in registry.PromptGetInput) (registry.PromptGetResult, error) {
	payload := map[string]any{"name": in.Name}
	if len(in.Arguments) > 0 {
		payload["arguments"] = in.Arguments
	}
	var out registry.PromptGetResult
	return out, r.call.Call(ctx, rules.FnPromptsMCPGet, payload, &out)
}

// versionFns are the function ids of the versions verbs, by kind.
var versionFns = map[Kind]map[string]string{
	KindSkill: {"versions": rules.FnSkillsVersions, "label": rules.FnSkillsLabel, "rollback": rules.FnSkillsRollback,
		"diff": rules.FnSkillsDiff, "yank": rules.FnSkillsYank, "unyank": rules.FnSkillsUnyank, "deprecate": rules.FnSkillsDeprecate},
	KindPrompt: {"versions": rules.FnPromptsVersions, "label": rules.FnPromptsLabel, "rollback": rules.FnPromptsRollback,
		"diff": rules.FnPromptsDiff, "yank": rules.FnPromptsYank, "unyank": rules.FnPromptsUnyank, "deprecate": rules.FnPromptsDeprecate},
}

// Function is the id of the registry function of verb ("versions",
// "label", "rollback", "diff") for kind k.
func (k Kind) Function(verb string) string { return versionFns[k][verb] }

// selectorValue is a selector as the functions take it: a number or a label.
func selectorValue(sel string) any {
	var n json.Number
	if json.Unmarshal([]byte(sel), &n) == nil {
		return n
	}
	return sel
}

// Versions implements Registry.
func (r *Remote) Versions(ctx context.Context, k Kind, id string) (history.Listing, error) {
	var out history.Listing
	return out, r.call.Read(ctx, k.Function("versions"), map[string]string{k.field(): id}, &out)
}

// Label implements Registry.
func (r *Remote) Label(ctx context.Context, _ Caller, k Kind, in LabelInput) (history.LabelMove, error) {
	payload := map[string]any{k.field(): in.ID, "label": in.Label, "version": selectorValue(in.Version)}
	if in.AdminToken != "" {
		payload["admin_token"] = in.AdminToken
	}
	var out history.LabelMove
	return out, r.call.Call(ctx, k.Function("label"), payload, &out)
}

// Rollback implements Registry.
func (r *Remote) Rollback(ctx context.Context, _ Caller, k Kind, in RollbackInput) (RollbackResult, error) {
	payload := map[string]any{k.field(): in.ID, "version": selectorValue(in.Version)}
	if in.Meta.Message != "" {
		payload["message"] = in.Meta.Message
	}
	if in.Meta.Author != "" {
		payload["author"] = in.Meta.Author
	}
	var out RollbackResult
	return out, r.call.Call(ctx, k.Function("rollback"), payload, &out)
}

// Diff implements Registry.
func (r *Remote) Diff(ctx context.Context, k Kind, in DiffInput) (DiffResult, error) {
	payload := map[string]any{k.field(): in.ID, "from": selectorValue(in.From), "to": selectorValue(in.To)}
	var out DiffResult
	return out, r.call.Read(ctx, k.Function("diff"), payload, &out)
}

// Yank implements Registry.
func (r *Remote) Yank(ctx context.Context, _ Caller, k Kind, in YankInput) (YankResult, error) {
	payload := map[string]any{k.field(): in.ID, "version": selectorValue(in.Version), "reason": in.Reason}
	if in.AdminToken != "" {
		payload["admin_token"] = in.AdminToken
	}
	var out YankResult
	return out, r.call.Call(ctx, k.Function("yank"), payload, &out)
}

// Unyank implements Registry.
func (r *Remote) Unyank(ctx context.Context, _ Caller, k Kind, in YankInput) (YankResult, error) {
	payload := map[string]any{k.field(): in.ID, "version": selectorValue(in.Version)}
	if in.AdminToken != "" {
		payload["admin_token"] = in.AdminToken
	}
	var out YankResult
	return out, r.call.Call(ctx, k.Function("unyank"), payload, &out)
}

// Deprecate implements Registry ("" undeprecates: message null).
func (r *Remote) Deprecate(ctx context.Context, _ Caller, k Kind, in DeprecateInput) (DeprecateResult, error) {
	payload := map[string]any{k.field(): in.ID, "message": nil}
	if in.Message != "" {
		payload["message"] = in.Message
	}
	var out DeprecateResult
	return out, r.call.Call(ctx, k.Function("deprecate"), payload, &out)
}

// notPublished reports a registry that does not publish its catalog (an
// upstream skills worker): it serves no skill:// skills.
func notPublished(err error) bool {
	var inv *iii.InvocationError
	return errors.As(err, &inv) && inv.Code == iii.CodeFunctionNotFound
}

// CatalogSkills implements Registry (none when the registry does not
// publish its catalog). An answer may stop early at its byte budget: more
// is then true.
func (r *Remote) CatalogSkills(ctx context.Context, after string, limit int) ([]skillsext.Skill, bool, error) {
	payload := map[string]any{"after": after, "limit": limit}
	if r.opts.PageBytes > 0 {
		payload["max_bytes"] = r.opts.PageBytes
	}
	var out CatalogListOutput
	err := r.call.Read(ctx, rules.FnCatalogList, payload, &out)
	if notPublished(err) {
		return nil, false, nil
	}
	return out.Skills, out.More, err
}

// CatalogSkill implements Registry.
func (r *Remote) CatalogSkill(ctx context.Context, path string) (skillsext.Skill, bool, error) {
	var out CatalogGetOutput
	err := r.call.Read(ctx, rules.FnCatalogGet, map[string]string{"path": path}, &out)
	if notPublished(err) {
		return skillsext.Skill{}, false, nil
	}
	if err != nil || out.Skill == nil {
		return skillsext.Skill{}, false, err
	}
	return *out.Skill, true, nil
}

// CatalogFile implements Registry, chunk by chunk. Every chunk after the
// first names the version (sha256) the first came from, so the bytes
// returned are one version of the file: one that changes between chunks
// is read again from its start, up to CatalogReadAttempts times.
func (r *Remote) CatalogFile(ctx context.Context, path, file string) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		b, err := r.readFileOnce(ctx, path, file)
		var inv *iii.InvocationError
		if err == nil || !errors.As(err, &inv) || inv.Code != CodeFileChanged {
			return b, err
		}
		if attempt == CatalogReadAttempts {
			return nil, fmt.Errorf("%s: %s of skill %s changed while it was read, %d times in a row: %w",
				rules.FnCatalogFile, file, path, CatalogReadAttempts, err)
		}
	}
}

func (r *Remote) readFileOnce(ctx context.Context, path, file string) ([]byte, error) {
	var buf []byte
	version := ""
	for {
		payload := map[string]any{"path": path, "file": file, "offset": len(buf)}
		if version != "" {
			payload["sha256"] = version
		}
		if r.opts.ChunkBytes > 0 {
			payload["max_bytes"] = r.opts.ChunkBytes
		}
		var out CatalogFileOutput
		if err := r.call.Read(ctx, rules.FnCatalogFile, payload, &out); err != nil {
			var inv *iii.InvocationError
			if errors.As(err, &inv) && inv.Code == rules.CodeNotFound {
				return nil, skillsext.ErrNoSuchFile
			}
			return nil, err
		}
		chunk, err := base64.StdEncoding.DecodeString(out.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rules.FnCatalogFile, err)
		}
		if buf == nil {
			buf = make([]byte, 0, out.Size)
			version = out.SHA256
		}
		buf = append(buf, chunk...)
		if int64(len(buf)) >= out.Size {
			return buf, nil
		}
		if len(chunk) == 0 {
			return nil, fmt.Errorf("%s: an empty chunk at offset %d of %s of skill %s (%d bytes)", rules.FnCatalogFile, len(buf), file, path, out.Size)
		}
	}
}

// Watch implements Registry: it binds internal functions of this client
// (ids under "mcp::<random>::", a hidden namespace, so several surfaces can
// share one engine) to skills::on-change, prompts::on-change and
// skills::catalog-on-change. A registry that does not publish its catalog
// (upstream's) has no catalog changes to tell.
func (r *Remote) Watch(ctx context.Context, fn func(Change)) (func(), error) {
	w := newWatcher(fn)
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "mcp::" + hex.EncodeToString(b[:]) + "::"
	var cleanups []func()
	unbind := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		w.close()
	}
	bind := func(name, triggerType string, decode func(json.RawMessage) (Change, bool)) error {
		fid := prefix + name
		ref, err := r.client.RegisterFunction(fid, func(_ context.Context, data json.RawMessage) (any, error) {
			if c, ok := decode(data); ok {
				w.add(c)
			}
			return nil, nil
		}, iii.RegisterFunctionOptions{Description: "Follows the skills registry's changes (" + triggerType + ")", Metadata: iii.InternalMetadata})
		if err != nil {
			return fmt.Errorf("register %s: %w", fid, err)
		}
		tid := uuid.NewString()
		if err := r.client.RegisterTrigger(tid, triggerType, fid, json.RawMessage(`{}`)); err != nil {
			_ = ref.Unregister()
			return fmt.Errorf("bind %s to %s: %w", fid, triggerType, err)
		}
		cleanups = append(cleanups, func() { _ = r.client.UnregisterTrigger(tid); _ = ref.Unregister() })
		return nil
	}
	decodeEvent := func(kind ChangeKind, key string) func(json.RawMessage) (Change, bool) {
		return func(data json.RawMessage) (Change, bool) {
			var ev map[string]string
			_ = json.Unmarshal(data, &ev)
			// An event without an id asks for everything again.
			return Change{Kind: kind, Op: ev["op"], ID: ev[key]}, true
		}
	}
	for _, t := range []struct {
		name, trigger string
		decode        func(json.RawMessage) (Change, bool)
	}{
		{"skills-changed", rules.TriggerSkillsOnChange, decodeEvent(ChangeSkill, "id")},
		{"prompts-changed", rules.TriggerPromptsOnChange, decodeEvent(ChangePrompt, "name")},
	} {
		if err := bind(t.name, t.trigger, t.decode); err != nil {
			unbind()
			return nil, err
		}
	}
	if err := bind("catalog-changed", rules.TriggerCatalogOnChange, func(data json.RawMessage) (Change, bool) {
		var ev struct {
			Path string `json:"path"`
		}
		return Change{Kind: ChangeCatalog, ID: ev.Path}, json.Unmarshal(data, &ev) == nil && ev.Path != ""
	}); err != nil {
		r.log.Warn("cannot follow the registry's catalog; skill:// changes are not announced", "err", err)
	}
	var once sync.Once
	stop := func() { once.Do(unbind) }
	context.AfterFunc(ctx, stop)
	go w.run()
	return stop, nil
}

// The catalog functions' answers and limits (skills::catalog-*): answers
// stay well under the engine's 16 MiB frame limit: a listing stops once its
// skills encode to CatalogListBudget bytes, a file comes CatalogChunkBytes
// at a time (base64 makes it 4/3 larger).
const (
	CatalogChunkBytes   = 4 << 20
	CatalogListBudget   = 4 << 20
	CatalogReadAttempts = 3
	// CodeFileChanged refuses a chunk of a version the file no longer
	// has: the read starts over.
	CodeFileChanged = "FILE_CHANGED"
)

// CatalogListOutput is the answer of skills::catalog-list.
type CatalogListOutput struct {
	Skills []skillsext.Skill `json:"skills"`
	More   bool              `json:"more"`
}

// CatalogGetOutput is the answer of skills::catalog-get.
type CatalogGetOutput struct {
	Skill *skillsext.Skill `json:"skill"`
}

// CatalogFileOutput is the answer of skills::catalog-file.
type CatalogFileOutput struct {
	Data   string `json:"data"`   // base64 of the bytes from offset, at most one chunk
	Size   int64  `json:"size"`   // of the whole file
	SHA256 string `json:"sha256"` // of the whole file: the version the chunk is from
}
