package registry

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Struct fields below are declared in alphabetical JSON-key order, so that
// encoding/json emits keys in the same order serde_json (BTreeMap-backed
// json! values, and upstream's derived structs where order matches) does.
// Key order carries no meaning; it only keeps the bytes comparable.

// PromptArgument is one declared prompt argument. Description is nil (and
// omitted from JSON) when none was given; Required defaults to false.
type PromptArgument struct {
	Description *string `json:"description,omitempty"`
	Name        string  `json:"name"`
	Required    bool    `json:"required"`
}

// StoredSkill is the row kept in the skills state scope, keyed by ID.
type StoredSkill struct {
	ID           string `json:"id"`
	RegisteredAt string `json:"registered_at"`
	Skill        string `json:"skill"`
}

// StoredPrompt is the row kept in the prompts state scope, keyed by Name.
// Description and FunctionID are stored untrimmed.
type StoredPrompt struct {
	Arguments    []PromptArgument `json:"arguments"`
	Description  string           `json:"description"`
	FunctionID   string           `json:"function_id"`
	Name         string           `json:"name"`
	RegisteredAt string           `json:"registered_at"`
}

// Timestamp formats t like chrono's Utc::now().to_rfc3339(): UTC, a
// "+00:00" offset (never "Z") and "AutoSi" fractional seconds: none when
// the nanoseconds are 0, else 3, 6 or 9 digits, the fewest that are exact.
func Timestamp(t time.Time) string {
	var buf [40]byte
	return string(AppendTimestamp(buf[:0], t))
}

// AppendTimestamp appends Timestamp(t) to b. It writes the digits itself:
// time.Format cost a register ~3 % of the server's CPU (every new row is
// stamped, and parsing a row back checks the stamp renders identically).
func AppendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return appendTimestampSlow(b, t)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = appendFraction(b, t.Nanosecond())
	return append(b, "+00:00"...)
}

// appendFraction appends chrono's AutoSi fraction of ns nanoseconds.
func appendFraction(b []byte, ns int) []byte {
	switch {
	case ns == 0:
		return b
	case ns%1_000_000 == 0:
		return appendDigits(append(b, '.'), ns/1_000_000, 3)
	case ns%1_000 == 0:
		return appendDigits(append(b, '.'), ns/1_000, 6)
	default:
		return appendDigits(append(b, '.'), ns, 9)
	}
}

// appendTimestampSlow is AppendTimestamp for years time.Format pads or
// signs its own way.
func appendTimestampSlow(b []byte, t time.Time) []byte {
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	b = appendFraction(b, t.Nanosecond())
	return append(b, "+00:00"...)
}

// appendDigits appends v (0 ≤ v) in decimal, zero-padded to width.
func appendDigits(b []byte, v, width int) []byte {
	var d [20]byte
	i := len(d)
	for v > 0 || len(d)-i < width {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[i:]...)
}

// NewStoredSkill builds the row for a registration at time now.
func NewStoredSkill(id, body string, now time.Time) StoredSkill {
	return StoredSkill{ID: id, RegisteredAt: Timestamp(now), Skill: body}
}

// NewStoredPrompt builds the row for a registration at time now. A nil
// args becomes an empty list so the row always carries "arguments": [].
func NewStoredPrompt(name, description, functionID string, args []PromptArgument, now time.Time) StoredPrompt {
	if args == nil {
		args = []PromptArgument{}
	}
	return StoredPrompt{
		Arguments:    args,
		Description:  description,
		FunctionID:   functionID,
		Name:         name,
		RegisteredAt: Timestamp(now),
	}
}

// --- Function outputs of the CRUD surface -------------------------------

// RegisterSkillOutput is the skills::register response.
type RegisterSkillOutput struct {
	ID           string `json:"id"`
	RegisteredAt string `json:"registered_at"`
}

// UnregisterSkillOutput is the skills::unregister response.
type UnregisterSkillOutput struct {
	ID      string `json:"id"`
	Removed bool   `json:"removed"`
}

// SkillListEntry is one row of skills::list: the body's UTF-8 byte length
// instead of the body.
type SkillListEntry struct {
	Bytes        int    `json:"bytes"`
	ID           string `json:"id"`
	RegisteredAt string `json:"registered_at"`
}

// SkillList is the skills::list response.
type SkillList struct {
	Skills []SkillListEntry `json:"skills"`
}

// NewSkillList builds the skills::list response, sorted by id (bytewise).
func NewSkillList(rows []StoredSkill) SkillList {
	out := make([]SkillListEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, SkillListEntry{Bytes: len(r.Skill), ID: r.ID, RegisteredAt: r.RegisteredAt})
	}
	slices.SortStableFunc(out, func(a, b SkillListEntry) int { return strings.Compare(a.ID, b.ID) })
	return SkillList{Skills: out}
}

// RegisterPromptOutput is the prompts::register response.
type RegisterPromptOutput struct {
	Name         string `json:"name"`
	RegisteredAt string `json:"registered_at"`
}

// UnregisterPromptOutput is the prompts::unregister response.
type UnregisterPromptOutput struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

// PromptListEntry is one row of prompts::list: the argument count instead
// of the arguments.
type PromptListEntry struct {
	Arguments    int    `json:"arguments"`
	FunctionID   string `json:"function_id"`
	Name         string `json:"name"`
	RegisteredAt string `json:"registered_at"`
}

// PromptList is the prompts::list response.
type PromptList struct {
	Prompts []PromptListEntry `json:"prompts"`
}

// NewPromptList builds the prompts::list response, sorted by name.
func NewPromptList(rows []StoredPrompt) PromptList {
	out := make([]PromptListEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, PromptListEntry{
			Arguments: len(r.Arguments), FunctionID: r.FunctionID, Name: r.Name, RegisteredAt: r.RegisteredAt,
		})
	}
	slices.SortStableFunc(out, func(a, b PromptListEntry) int { return strings.Compare(a.Name, b.Name) })
	return PromptList{Prompts: out}
}

// SkillChange is the skills::on-change payload; exactly these two keys.
type SkillChange struct {
	ID string `json:"id"`
	Op string `json:"op"`
}

// PromptChange is the prompts::on-change payload; exactly these two keys.
type PromptChange struct {
	Name string `json:"name"`
	Op   string `json:"op"`
}

// --- MCP-shaped envelopes -------------------------------------------------

// Resource is one resources/list entry. Description is only set on the
// index entry; per-skill entries carry none.
type Resource struct {
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType"`
	Name        string `json:"name"`
	URI         string `json:"uri"`
}

// ResourcesList is the skills::resources-list response.
type ResourcesList struct {
	Resources []Resource `json:"resources"`
}

// IndexResource is the first resources/list entry, always present.
func IndexResource() Resource {
	return Resource{
		Description: IndexResourceDescription,
		MimeType:    MimeMarkdown,
		Name:        IndexResourceName,
		URI:         IndexURI,
	}
}

// SkillResource is the resources/list entry of one skill: name is the H1
// title or the id, and there is no description.
func SkillResource(e IndexEntry) Resource {
	return Resource{MimeType: MimeMarkdown, Name: e.DisplayTitle(e.ID), URI: SkillURI(e.ID)}
}

// NewResourcesList builds the resources-list envelope: the index entry
// first, then one entry per skill in bytewise id order (input order does
// not matter). A registered id "skills" yields a second iii://skills entry,
// as upstream.
func NewResourcesList(entries []IndexEntry) ResourcesList {
	sorted := entries
	if !slices.IsSortedFunc(entries, compareIDs) {
		sorted = slices.Clone(entries)
		slices.SortStableFunc(sorted, compareIDs)
	}
	out := make([]Resource, 0, len(sorted)+1)
	out = append(out, IndexResource())
	for _, e := range sorted {
		out = append(out, SkillResource(e))
	}
	return ResourcesList{Resources: out}
}

// ResourceContent is one resources/read content item.
type ResourceContent struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	URI      string `json:"uri"`
	// Yanked is ours: the reason a version a read pins (iii://id@3,
	// @sha256:…) was yanked; never set on any other read.
	Yanked string `json:"yanked,omitempty"`
}

// ReadResult is the skills::resources-read response: always exactly one
// content item, whose uri echoes the request verbatim.
type ReadResult struct {
	Contents []ResourceContent `json:"contents"`
}

// NewReadResult builds the resources-read envelope.
func NewReadResult(uri, mimeType, text string) ReadResult {
	return ReadResult{Contents: []ResourceContent{{MimeType: mimeType, Text: text, URI: uri}}}
}

// ResourceTemplate is one resources/templates/list entry.
type ResourceTemplate struct {
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
	Name        string `json:"name"`
	URITemplate string `json:"uriTemplate"`
}

// ResourceTemplates is the skills::resources-templates response.
type ResourceTemplates struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
}

// Templates returns the constant v0.2.2 resources-templates envelope.
func Templates() ResourceTemplates {
	return ResourceTemplates{ResourceTemplates: []ResourceTemplate{
		{
			Description: SkillTemplateDescription,
			MimeType:    MimeMarkdown,
			Name:        SkillTemplateName,
			URITemplate: SkillTemplateURI,
		},
		{
			Description: SectionTemplateDescription,
			MimeType:    MimeMarkdown,
			Name:        SectionTemplateName,
			URITemplate: SectionTemplateURI,
		},
	}}
}

// MCPPromptArgument is one argument of a prompts/list entry; Description is
// omitted when none was registered.
type MCPPromptArgument struct {
	Description *string `json:"description,omitempty"`
	Name        string  `json:"name"`
	Required    bool    `json:"required"`
}

// MCPPrompt is one prompts/list entry.
type MCPPrompt struct {
	Arguments   []MCPPromptArgument `json:"arguments"`
	Description string              `json:"description"`
	Name        string              `json:"name"`
}

// MCPPromptList is the prompts::mcp-list response.
type MCPPromptList struct {
	Prompts []MCPPrompt `json:"prompts"`
}

// NewMCPPrompt converts a stored prompt to its prompts/list entry.
func NewMCPPrompt(p StoredPrompt) MCPPrompt {
	args := make([]MCPPromptArgument, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		args = append(args, MCPPromptArgument{Description: a.Description, Name: a.Name, Required: a.Required})
	}
	return MCPPrompt{Arguments: args, Description: p.Description, Name: p.Name}
}

// NewMCPPromptList builds the prompts::mcp-list envelope sorted by name;
// never nil, so an empty registry encodes as {"prompts":[]}.
func NewMCPPromptList(rows []StoredPrompt) MCPPromptList {
	out := make([]MCPPrompt, 0, len(rows))
	for _, r := range rows {
		out = append(out, NewMCPPrompt(r))
	}
	slices.SortStableFunc(out, func(a, b MCPPrompt) int { return strings.Compare(a.Name, b.Name) })
	return MCPPromptList{Prompts: out}
}

// PromptGetResult is the prompts::mcp-get response: the stored description
// and the normalized messages (NormalizePromptOutput).
type PromptGetResult struct {
	Description string            `json:"description"`
	Messages    []json.RawMessage `json:"messages"`
}
