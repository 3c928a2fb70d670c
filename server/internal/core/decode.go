package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Bounds of a search request.
const (
	DefaultSearchLimit  = 10
	MaxSearchLimit      = 100
	MaxSearchQueryChars = 1000
)

// Bounds of a version's message and author.
const (
	maxMessageBytes = 4096
	maxAuthorBytes  = 256
)

const searchShape = `{"query": "<words>", "limit": 1..100 (optional), "namespace": "<id prefix>" (optional)}`

// DecodeSearchInput decodes the input of search function fn (skills::search,
// skill::search, or a surface asking the same).
func DecodeSearchInput(fn string, data json.RawMessage) (SearchInput, error) {
	in := SearchInput{Limit: DefaultSearchLimit}
	a, err := decodeArgs(fn, data, searchShape, true, "query", "limit", "namespace")
	if err != nil {
		return in, err
	}
	if in.Query, err = a.String("query", true, 0, "a string of words"); err != nil {
		return in, err
	}
	limit, err := a.Integer("limit", 1, MaxSearchLimit, DefaultSearchLimit)
	if err != nil {
		return in, err
	}
	in.Limit = int(limit)
	if in.Namespace, err = a.String("namespace", false, 0, `a string (a skill id prefix such as "iii")`); err != nil {
		return in, err
	}
	if in.Namespace != "" {
		if err := registry.ValidateID(in.Namespace); err != nil {
			return in, a.Bad("namespace %q is not a skill id prefix: %v", in.Namespace, err)
		}
	}
	if strings.TrimSpace(in.Query) == "" {
		return in, a.Bad("query is empty: say in a few words what the skill should do (\"shrink images for the web\")")
	}
	if n := utf8.RuneCountInString(in.Query); n > MaxSearchQueryChars {
		return in, a.Bad("query too long (%d chars; max %d)", n, MaxSearchQueryChars)
	}
	return in, nil
}

// field is the payload field naming kind's ids.
func (k Kind) field() string {
	if k == KindPrompt {
		return "name"
	}
	return "id"
}

// validate checks id by kind's rules.
func (k Kind) validate(id string) error {
	if k == KindPrompt {
		return registry.ValidateName(id)
	}
	return registry.ValidateID(id)
}

// versionsArgs decodes a versions function's payload and the id it names.
func versionsArgs(fn string, kind Kind, data json.RawMessage, known ...string) (args, string, error) {
	shape := fmt.Sprintf("{%q: …, %s}", kind.field(), strings.Join(known, ", "))
	a, err := decodeArgs(fn, data, shape, true, append([]string{kind.field()}, known...)...)
	if err != nil {
		return a, "", err
	}
	id, err := a.String(kind.field(), true, 0, "a string")
	if err != nil {
		return a, "", err
	}
	if err := kind.validate(id); err != nil {
		return a, "", invalidArguments(err)
	}
	return a, id, nil
}

// DecodeVersionsInput decodes skills::versions / prompts::versions: the id.
func DecodeVersionsInput(fn string, kind Kind, data json.RawMessage) (string, error) {
	_, id, err := versionsArgs(fn, kind, data)
	return id, err
}

// DecodeLabelInput decodes skills::label / prompts::label.
func DecodeLabelInput(fn string, kind Kind, data json.RawMessage) (LabelInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "label", "version", "admin_token")
	if err != nil {
		return LabelInput{}, err
	}
	in := LabelInput{ID: id}
	if in.Label, err = a.String("label", true, 0, "a string"); err != nil {
		return in, err
	}
	if in.Version, err = a.selector("version"); err != nil {
		return in, err
	}
	in.AdminToken, err = a.String("admin_token", false, 0, "a string")
	return in, err
}

// DecodeRollbackInput decodes skills::rollback / prompts::rollback.
func DecodeRollbackInput(fn string, kind Kind, data json.RawMessage) (RollbackInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "version", "message", "author")
	if err != nil {
		return RollbackInput{}, err
	}
	in := RollbackInput{ID: id}
	if in.Version, err = a.selector("version"); err != nil {
		return in, err
	}
	if in.Meta.Message, err = a.String("message", false, maxMessageBytes, "a string"); err != nil {
		return in, err
	}
	in.Meta.Author, err = a.String("author", false, maxAuthorBytes, "a string")
	return in, err
}

// DecodeDiffInput decodes skills::diff / prompts::diff.
func DecodeDiffInput(fn string, kind Kind, data json.RawMessage) (DiffInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "from", "to")
	if err != nil {
		return DiffInput{}, err
	}
	in := DiffInput{ID: id}
	if in.From, err = a.selector("from"); err != nil {
		return in, err
	}
	in.To, err = a.selector("to")
	return in, err
}

// DecodeYankInput decodes skills::yank / prompts::yank: the version and a
// reason (required: it reaches every reader of the version).
func DecodeYankInput(fn string, kind Kind, data json.RawMessage) (YankInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "version", "reason", "admin_token")
	if err != nil {
		return YankInput{}, err
	}
	in := YankInput{ID: id}
	if in.Version, err = a.selector("version"); err != nil {
		return in, err
	}
	if in.Reason, err = a.String("reason", true, history.MaxReasonBytes, "a string saying why the version is withdrawn"); err != nil {
		return in, err
	}
	if strings.TrimSpace(in.Reason) == "" {
		return in, a.Bad("reason is empty: say why the version is withdrawn (it reaches every reader of it)")
	}
	in.AdminToken, err = a.String("admin_token", false, 0, "a string")
	return in, err
}

// DecodeUnyankInput decodes skills::unyank / prompts::unyank.
func DecodeUnyankInput(fn string, kind Kind, data json.RawMessage) (YankInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "version", "admin_token")
	if err != nil {
		return YankInput{}, err
	}
	in := YankInput{ID: id}
	if in.Version, err = a.selector("version"); err != nil {
		return in, err
	}
	in.AdminToken, err = a.String("admin_token", false, 0, "a string")
	return in, err
}

// DecodeDeprecateInput decodes skills::deprecate / prompts::deprecate: a
// message, or null to undeprecate (the key is required, so that an
// undeprecation is never a typo).
func DecodeDeprecateInput(fn string, kind Kind, data json.RawMessage) (DeprecateInput, error) {
	a, id, err := versionsArgs(fn, kind, data, "message")
	if err != nil {
		return DeprecateInput{}, err
	}
	in := DeprecateInput{ID: id}
	if !a.Has("message") {
		return in, a.Bad("message is required (expected a string saying what to use instead, or null to undeprecate)")
	}
	if in.Message, err = a.String("message", false, history.MaxMessageBytes, "a string, or null to undeprecate"); err != nil {
		return in, err
	}
	if a.Present("message") && strings.TrimSpace(in.Message) == "" {
		return in, a.Bad("message is empty: say what to use instead, or send null to undeprecate")
	}
	return in, nil
}

// checkMeta bounds a registration's message and author (upstream's
// decoder read them; their sizes are ours).
func checkMeta(fn string, m history.Meta) error {
	switch {
	case len(m.Message) > maxMessageBytes:
		return invalidArguments(fmt.Errorf("%s: message is %d bytes, the limit is %d", fn, len(m.Message), maxMessageBytes))
	case len(m.Author) > maxAuthorBytes:
		return invalidArguments(fmt.Errorf("%s: author is %d bytes, the limit is %d", fn, len(m.Author), maxAuthorBytes))
	}
	return nil
}

// CatalogListInput is the input of skills::catalog-list.
type CatalogListInput struct {
	After string
	Limit int
	// MaxBytes lowers the answer's byte budget.
	MaxBytes int
}

// DecodeCatalogListInput decodes skills::catalog-list.
func DecodeCatalogListInput(fn string, data json.RawMessage) (CatalogListInput, error) {
	a, err := decodeArgs(fn, data, `{"after"?: "<path>", "limit"?: n, "max_bytes"?: n}`, false, "after", "limit", "max_bytes")
	if err != nil {
		return CatalogListInput{}, err
	}
	var in CatalogListInput
	if in.After, err = a.String("after", false, 0, "a string"); err != nil {
		return in, err
	}
	limit, err := a.Integer("limit", 0, 1<<31-1, 0)
	if err != nil {
		return in, err
	}
	maxBytes, err := a.Integer("max_bytes", 0, 1<<31-1, 0)
	in.Limit, in.MaxBytes = int(limit), int(maxBytes)
	return in, err
}

// DecodeCatalogGetInput decodes skills::catalog-get: the skill path.
func DecodeCatalogGetInput(fn string, data json.RawMessage) (string, error) {
	a, err := decodeArgs(fn, data, `{"path": "<skill path>"}`, true, "path")
	if err != nil {
		return "", err
	}
	return a.String("path", true, 0, "a string")
}

// CatalogFileInput is the input of skills::catalog-file.
type CatalogFileInput struct {
	Path, File string
	Offset     int64
	// SHA256, when set, is the version the earlier chunks came from.
	SHA256 string
	// MaxBytes lowers the chunk size.
	MaxBytes int
}

// DecodeCatalogFileInput decodes skills::catalog-file.
func DecodeCatalogFileInput(fn string, data json.RawMessage) (CatalogFileInput, error) {
	a, err := decodeArgs(fn, data, `{"path": "<skill path>", "file": "<file>", "offset"?: n, "sha256"?: "<hex>", "max_bytes"?: n}`, true,
		"path", "file", "offset", "sha256", "max_bytes")
	if err != nil {
		return CatalogFileInput{}, err
	}
	var in CatalogFileInput
	if in.Path, err = a.String("path", true, 0, "a string"); err != nil {
		return in, err
	}
	if in.File, err = a.String("file", true, 0, "a string"); err != nil {
		return in, err
	}
	if in.Offset, err = a.Integer("offset", 0, 1<<53, 0); err != nil {
		return in, err
	}
	if in.SHA256, err = a.String("sha256", false, 64, "a string"); err != nil {
		return in, err
	}
	maxBytes, err := a.Integer("max_bytes", 0, 1<<31-1, 0)
	in.MaxBytes = int(maxBytes)
	return in, err
}
