package core

import (
	"context"

	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/scope"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// Registry is the skills registry as every surface sees it. Local is the
// registry itself (the rules run there); Remote reaches one in another
// process over iii. Requests and results are the registry's wire types:
// what the iii functions take and answer is what these methods take and
// return, encoded once. Refusals are *iii.InvocationError values whose
// code says what was wrong (INVALID_ARGUMENTS, NOT_FOUND, FORBIDDEN,
// OUT_OF_SCOPE); any other failure is one too, with code
// invocation_failed, whichever implementation answered.
type Registry interface {
	// ListSkills is skills::list: every skill served, with its origin and
	// the skills it shadows.
	ListSkills(ctx context.Context) (SkillList, error)
	// Resources is skills::resources-list: the index first, then every skill.
	Resources(ctx context.Context) (Resources, error)
	// Templates is skills::resources-templates.
	Templates(ctx context.Context) (registry.ResourceTemplates, error)
	// Read is skills::resources-read of any iii:// URI (a section read
	// calls the function behind it, through the engine).
	Read(ctx context.Context, uri string) (registry.ReadResult, error)
	// Fetch is skill::fetch.
	Fetch(ctx context.Context, in registry.FetchInput) (string, error)
	// Search is skills::search.
	Search(ctx context.Context, in SearchInput) (SearchOutput, error)
	// RegisterSkill and UnregisterSkill are skills::register and
	// skills::unregister made by caller.
	RegisterSkill(ctx context.Context, caller Caller, in registry.RegisterSkillInput) (registry.RegisterSkillOutput, error)
	UnregisterSkill(ctx context.Context, caller Caller, id string) (registry.UnregisterSkillOutput, error)

	// RegisterPrompt and UnregisterPrompt are prompts::register and
	// prompts::unregister made by caller.
	RegisterPrompt(ctx context.Context, caller Caller, in registry.RegisterPromptInput) (registry.RegisterPromptOutput, error)
	UnregisterPrompt(ctx context.Context, caller Caller, name string) (registry.UnregisterPromptOutput, error)
	// ListPrompts is prompts::list, MCPPrompts prompts::mcp-list.
	ListPrompts(ctx context.Context) (registry.PromptList, error)
	MCPPrompts(ctx context.Context) (registry.MCPPromptList, error)
	// GetPrompt is prompts::mcp-get: the prompt's handler renders it,
	// through the engine.
	GetPrompt(ctx context.Context, in registry.PromptGetInput) (registry.PromptGetResult, error)
	// PromptHandlers says, for every registered prompt by name, whether
	// its handler can render it now (a prompt whose publisher is gone, or
	// whose handler is on an engine this registry cannot reach, cannot),
	// from what the registry follows of the engines: no engine round trip
	// per prompt. Nil when this Registry cannot tell (Remote): every
	// prompt then counts as available.
	PromptHandlers(ctx context.Context) (map[string]PromptHandler, error)

	// Versions, Label, Rollback and Diff are skills::versions … and
	// prompts::versions … (kind says which).
	Versions(ctx context.Context, kind Kind, id string) (history.Listing, error)
	Label(ctx context.Context, caller Caller, kind Kind, in LabelInput) (history.LabelMove, error)
	Rollback(ctx context.Context, caller Caller, kind Kind, in RollbackInput) (RollbackResult, error)
	Diff(ctx context.Context, kind Kind, in DiffInput) (DiffResult, error)

	// Yank, Unyank and Deprecate are skills::yank, skills::unyank and
	// skills::deprecate and their prompts:: twins (kind says which) made
	// by caller (docs/trust.md).
	Yank(ctx context.Context, caller Caller, kind Kind, in YankInput) (YankResult, error)
	Unyank(ctx context.Context, caller Caller, kind Kind, in YankInput) (YankResult, error)
	Deprecate(ctx context.Context, caller Caller, kind Kind, in DeprecateInput) (DeprecateResult, error)

	// CatalogSkills, CatalogSkill and CatalogFile are the catalog as the
	// MCP Skills extension serves it (skill:// trees with digests):
	// CatalogSkills returns up to limit skills (all when limit <= 0) whose
	// path sorts after `after`, in path order, and whether more follow;
	// CatalogFile returns the exact bytes a file's digest covers, or
	// skillsext.ErrNoSuchFile.
	CatalogSkills(ctx context.Context, after string, limit int) ([]skillsext.Skill, bool, error)
	CatalogSkill(ctx context.Context, path string) (skillsext.Skill, bool, error)
	CatalogFile(ctx context.Context, path, file string) ([]byte, error)

	// Watch calls fn with every change of a skill, a prompt or a catalog
	// skill path from its return until stop is called or ctx ends, on a
	// goroutine of its own: a watcher that falls behind gets the latest
	// change of each id it missed, not every one.
	Watch(ctx context.Context, fn func(Change)) (stop func(), err error)
}

// Kind is what has versions: skills (named by their id) or prompts (by
// their name).
type Kind string

const (
	KindSkill  Kind = "skill"
	KindPrompt Kind = "prompt"
)

// Caller is who asks for a change. Over iii it is the caller the engine
// stamped on the invocation; a surface in this process that checked its
// own credentials says so with Operator.
type Caller struct {
	scope.Caller
	// Operator: the server's operator (the web page, behind its listener
	// token) acts on any id, owned or not. Never set from an invocation.
	Operator bool
}

// Operator is the caller of a change the operator made through a surface
// of this process that checked the operator's credentials.
func Operator() Caller { return Caller{Operator: true} }

// ChangeKind says what a Change is about.
type ChangeKind string

const (
	// ChangeSkill: a skill id was registered (again) or unregistered, or
	// what a read of it serves changed (Op register / unregister).
	ChangeSkill ChangeKind = "skill"
	// ChangePrompt: the same for a prompt name.
	ChangePrompt ChangeKind = "prompt"
	// ChangeCatalog: the catalog skill at path ID changed as the MCP
	// Skills extension serves it (no Op).
	ChangeCatalog ChangeKind = "catalog"
	// ChangeHandlers: the prompt handlers and section functions the
	// registry can reach changed (a publisher came or went, here or on
	// the engine across the iii-bridge): PromptHandlers may answer
	// differently (no Op, no ID). Only in-process watchers see it; iii has
	// no trigger type for it.
	ChangeHandlers ChangeKind = "handlers"
)

// Change is one change a Watch reports.
type Change struct {
	Kind ChangeKind
	// Op (skills and prompts) is registry.OpRegister or OpUnregister, or
	// OpYank, OpUnyank, OpDeprecate for a version yanked or put back and an
	// id deprecated or undeprecated.
	Op string
	ID string // skill id, prompt name or catalog skill path
}

// SkillOrigin marks a listed skill that a worker did not publish, and a
// skill another source's entry hides.
type SkillOrigin struct {
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`
	Source string `json:"source"`
}

// SkillListRow is a skills::list row. Published skills keep v0.2.2's
// exact three keys; other origins add "origin", and a row that hides
// another source's skill at its id adds "shadows".
type SkillListRow struct {
	Bytes        int           `json:"bytes"`
	ID           string        `json:"id"`
	Origin       *SkillOrigin  `json:"origin,omitempty"`
	RegisteredAt string        `json:"registered_at"`
	Shadows      []SkillOrigin `json:"shadows,omitempty"`
}

// SkillList is the skills::list answer.
type SkillList struct {
	Skills []SkillListRow `json:"skills"`
}

// Resource is a resources-list entry; skills a worker did not publish
// carry their origin kind ("folder", "bundle", "builtin").
type Resource struct {
	registry.Resource
	Origin string `json:"origin,omitempty"`
}

// Resources is the skills::resources-list answer.
type Resources struct {
	Resources []Resource `json:"resources"`
}

// LabelInput is a label move: point Label at Version (a number or a
// label) of ID. AdminToken unlocks protected labels.
type LabelInput struct {
	ID, Label, Version, AdminToken string
}

// RollbackInput registers Version's content of ID again as its newest
// version, with Meta describing it.
type RollbackInput struct {
	ID, Version string
	Meta        history.Meta
}

// DiffInput compares versions From and To of ID.
type DiffInput struct {
	ID, From, To string
}

// RollbackResult is the answer of skills::rollback and prompts::rollback.
type RollbackResult struct {
	ID         string `json:"id"`
	Version    int    `json:"version"`     // the version now newest
	Created    bool   `json:"created"`     // false: that content was the newest already
	RolledBack int    `json:"rolled_back"` // the version whose content it holds
}

// DiffResult is the answer of skills::diff and prompts::diff.
type DiffResult struct {
	ID   string `json:"id"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"` // unified diff; "" when both are equal
}

// YankInput is a yank (or unyank) of Version (a number, a label or
// sha256:<hex>) of ID, with Reason (yank only). AdminToken is needed when
// a protected label points at the version.
type YankInput struct {
	ID, Version, Reason, AdminToken string
}

// YankResult is the answer of skills::yank / unyank (and prompts::).
type YankResult struct {
	ID      string  `json:"id"`
	Version int     `json:"version"`
	Yanked  *string `json:"yanked"`  // the reason; null when not yanked
	Changed bool    `json:"changed"` // false: it was so already
	// Served is the version reads without a selector now serve; null when
	// every version is yanked.
	Served *int `json:"served"`
}

// DeprecateInput sets (Message) or removes ("") the deprecation of ID.
type DeprecateInput struct {
	ID, Message string
}

// DeprecateResult is the answer of skills::deprecate (and prompts::).
type DeprecateResult struct {
	ID         string  `json:"id"`
	Deprecated *string `json:"deprecated"` // null: not deprecated
	Previous   *string `json:"previous"`
}

// SearchInput is a decoded search request.
type SearchInput struct {
	Query     string
	Limit     int
	Namespace string
}

// SearchResult is one ranked skill.
type SearchResult struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Origin      string  `json:"origin"`
	URI         string  `json:"uri"`
	Score       float64 `json:"score"`
	// SHA256 is the digest of what the skill serves (ours: the version's
	// for a published skill, the manifest's for a skill with files), what
	// a pin @sha256:<hex> names; Deprecated the message of a deprecated one.
	SHA256     string `json:"sha256,omitempty"`
	Deprecated string `json:"deprecated,omitempty"`
}

// SearchOutput is the answer of skills::search.
type SearchOutput struct {
	Query         string         `json:"query"`
	Results       []SearchResult `json:"results"`
	LowConfidence bool           `json:"low_confidence"`
}
