package registry

// This file holds every exact upstream string of the skills worker v0.2.2
// that this package produces. The strings are part of the wire contract:
// callers and conformance tests match substrings of them, so they live in
// one place and are never spelled out anywhere else.
//
// Msg* constants are complete messages. Fmt* constants are fmt format
// strings; a %s that stands for a Rust `{x:?}` placeholder is always fed
// with rules.RustQuote(x).

import "github.com/iii-skills/skills/sdk-go/rules"

// The validation messages themselves live in sdk-go/rules (Msg*, Fmt*),
// which the publishers share.

// CodeInvalidArguments is the error code of a refusal: input the caller got
// wrong (see the package doc).
const CodeInvalidArguments = rules.CodeInvalidArguments

// CodeNotFound is the error code of a read of something the registry does
// not hold (unknown skill, prompt, version, label or section function),
// under upstream's message text.
const CodeNotFound = rules.CodeNotFound

// URI parsing messages (docs/reference/skills-worker.md §2.1). Every %s is the URI exactly as given.
const (
	FmtURIScheme        = "Resource URI must start with iii://: %s"
	FmtURIEmptyID       = "Empty resource id: %s"
	FmtURIEmptySegments = "Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): %s"
	FmtURIMissingFnPath = "Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: %s"
	// FmtURISectionSegment: Debug-quoted segment, segment error.
	FmtURISectionSegment = rules.FmtSectionSegment
)

// Read-path messages (docs/reference/skills-worker.md §2.2, §1.13, §3).
const (
	FmtSkillNotFound  = "Skill not found: %s"
	FmtPromptNotFound = "Prompt not found: %s"
	// FmtHiddenSection: the function id a section URI resolved to.
	FmtHiddenSection = rules.FmtHiddenSection
	// FmtHiddenPrompt: the stored function id of a prompt.
	FmtHiddenPrompt = rules.FmtHiddenPrompt
	// FmtTrigger: function id, the SDK error (wrapped with %w).
	FmtTrigger = "trigger %s: %w"
	// FmtStateCall: the state function's id (state::get), the SDK error
	// (wrapped with %w).
	FmtStateCall = "%s: %w"
	// FmtDecodeSkill / FmtDecodePrompt: id or name, the decode error.
	FmtDecodeSkill  = "decode stored skill %s: %w"
	FmtDecodePrompt = "decode stored prompt %s: %w"
)

// Fetch messages (docs/reference/skills-worker.md §2.6, §7).
const (
	MsgFetchNoInput = "Provide uri or a non-empty uris array"
	// FmtFetchInvalidURI: the trimmed entry.
	FmtFetchInvalidURI = "Invalid URI (must start with iii://): %s"
	// FetchSectionSeparator joins fetched sections.
	FetchSectionSeparator = "\n\n---\n\n"
)

// Output normalization messages (docs/reference/skills-worker.md §2.7).
const (
	MsgPromptUnsupportedShape = "prompt handler returned unsupported shape; expected string, { content }, or { messages: [...] }"
)

// Index rendering text (docs/reference/skills-worker.md §2.3).
const (
	// IndexHeader is the exact v0.2.2 header, including the blank line
	// after the paragraph.
	IndexHeader = "# Skills\n\nRead each skill's resource for orientation on when and why to call its functions. Sub-skills are indented under their parent path so a top-level skill stays small and the LLM can drill in only when it needs more detail.\n\n"
	// IndexEmptyLine is appended to the header when no skill is stored.
	IndexEmptyLine = "_No skills are currently registered._\n"
	// FmtIndexError is the whole index body when state::list failed:
	// %s = the error's display text.
	FmtIndexError = "# Skills\n\n_Error reading skills index: %s_\n"
	// IndexSeparator is U+2014 EM DASH with one space on each side.
	IndexSeparator = " \u2014 "
	// IndexTruncationMark is appended to descriptions cut at
	// MaxDescriptionChars (three ASCII periods, not U+2026).
	IndexTruncationMark = "..."
)

// MCP envelope strings (docs/reference/skills-worker.md §1.4, §1.6).
const (
	MimeMarkdown = "text/markdown"
	MimeJSON     = "application/json"

	IndexResourceName        = "skills"
	IndexResourceDescription = "Index of every registered skill"

	SkillTemplateURI         = "iii://{skill_id}"
	SkillTemplateName        = "Skill"
	SkillTemplateDescription = "Markdown body of a registered skill (1+ segments separated by '/')"

	SectionTemplateURI         = "iii://fn/{function_path}"
	SectionTemplateName        = "Skill section"
	SectionTemplateDescription = "Trigger the function at `function_path` (each '/' becomes '::') with empty input and serve its output. e.g. `iii://fn/scope/echo` triggers `scope::echo`."
)

const (
	// OpRegister / OpUnregister are the on-change "op" values.
	OpRegister   = "register"
	OpUnregister = "unregister"
	// OpYank, OpUnyank and OpDeprecate are ours: a version was yanked or
	// put back, an id deprecated or undeprecated (docs/trust.md).
	OpYank      = "yank"
	OpUnyank    = "unyank"
	OpDeprecate = "deprecate"
)

// Stored-row decoding messages, worded like serde's (the Display text a
// Rust worker would put after "decode stored skill {id}: ").
const (
	// FmtMissingField: field name.
	FmtMissingField = "missing field `%s`"
	// FmtDuplicateField: field name.
	FmtDuplicateField = "duplicate field `%s`"
	// FmtInvalidType: unexpected-value description, expectation.
	FmtInvalidType = "invalid type: %s, expected %s"
)
