package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP Skills extension (io.modelcontextprotocol/skills, SEP-2640).
const (
	ExtensionSkills = "io.modelcontextprotocol/skills"

	MethodSkillsList    = "skills/list"
	MethodSkillsGet     = "skills/get"
	MethodDirectoryRead = "resources/directory/read"

	// MetaKeyOrigin is the _meta key of a listed skill (resources/list,
	// skills/list) that says where it comes from: "published", "folder",
	// "bundle" or "builtin".
	MetaKeyOrigin = "io.iii-skills/origin"

	// The _meta keys of a skill's facts in skills/list and skills/get
	// (docs/trust.md): the digest a pin @sha256:<hex> names, and for a published skill its registry version,
	// who signed it (null when unsigned), the key's fingerprint, its yank
	// reason and the skill's deprecation.
	MetaKeySHA256     = "io.iii-skills/sha256"
	MetaKeyVersion    = "io.iii-skills/version"
	MetaKeySignedBy   = "io.iii-skills/signed_by"
	MetaKeyKey        = "io.iii-skills/key"
	MetaKeyYanked     = "io.iii-skills/yanked"
	MetaKeyDeprecated = "io.iii-skills/deprecated"

	mimeDirectory = "inode/directory"
	mimeMarkdown  = "text/markdown"
)

// skillResourceWire is a SkillResource of the extension.
type skillResourceWire struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// skillWire is a Skill entry of the extension.
type skillWire struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   any             `json:"resources"` // []skillResourceWire or "dynamic"
	Meta        sdk.Meta        `json:"_meta,omitempty"`
}

// skillMeta is the _meta of a listed skill: its origin and facts.
func skillMeta(e skillsext.Skill) sdk.Meta {
	m := originMeta(e.Origin)
	add := func(k string, v any) {
		if m == nil {
			m = sdk.Meta{}
		}
		m[k] = v
	}
	if e.SHA256 != "" {
		add(MetaKeySHA256, e.SHA256)
	}
	if e.Version > 0 {
		add(MetaKeyVersion, e.Version)
	}
	if len(e.SignedBy) > 0 {
		var who *string
		_ = json.Unmarshal(e.SignedBy, &who)
		if who == nil {
			add(MetaKeySignedBy, nil)
		} else {
			add(MetaKeySignedBy, *who)
		}
	}
	for k, v := range map[string]string{MetaKeyKey: e.Key, MetaKeyYanked: e.Yanked, MetaKeyDeprecated: e.Deprecated} {
		if v != "" {
			add(k, v)
		}
	}
	return m
}

// originMeta is the _meta naming a skill's origin (nil when unknown).
func originMeta(origin string) sdk.Meta {
	if origin == "" {
		return nil
	}
	return sdk.Meta{MetaKeyOrigin: origin}
}

type listSkillsResult struct {
	sdk.ResultBase
	ResultType string      `json:"resultType"`
	Skills     []skillWire `json:"skills"`
	NextCursor string      `json:"nextCursor,omitempty"`
	TTLMs      int         `json:"ttlMs"`
	CacheScope string      `json:"cacheScope"`
}

type getSkillResult struct {
	sdk.ResultBase
	ResultType string    `json:"resultType"`
	Skill      skillWire `json:"skill"`
	TTLMs      int       `json:"ttlMs"`
	CacheScope string    `json:"cacheScope"`
}

type directoryResult struct {
	sdk.ResultBase
	ResultType string          `json:"resultType"`
	Resources  []*sdk.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

func toWire(e skillsext.Skill) skillWire {
	w := skillWire{URI: SkillURI(e.Path, SkillFileName), Frontmatter: e.Frontmatter, Meta: skillMeta(e)}
	if len(w.Frontmatter) == 0 {
		w.Frontmatter = json.RawMessage("{}")
	}
	if e.Dynamic {
		w.Resources = "dynamic"
		return w
	}
	res := make([]skillResourceWire, len(e.Files))
	for i, f := range e.Files {
		res[i] = skillResourceWire{URI: SkillURI(e.Path, f.Path), Digest: "sha256:" + f.SHA256, Size: f.Size}
	}
	w.Resources = res
	return w
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// extensionParams are the params of every extension method (uri for
// skills/get and resources/directory/read, cursor for the listings).
type extensionParams struct {
	sdk.ParamsBase
	URI    string `json:"uri,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// UnmarshalJSON names what was expected; go-sdk reports the error as
// invalid params (-32602).
func (p *extensionParams) UnmarshalJSON(b []byte) error {
	type plain extensionParams
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return fmt.Errorf("params must be an object with string fields uri and cursor: %w", err)
	}
	return nil
}

// addExtensionMethods registers the Skills extension methods with go-sdk
// (AddReceivingCustomMethod): they then pass its transport checks, its
// initialization gate and its middleware like its own methods, on every
// transport, and it stamps the 2026-07-28 serverInfo _meta on their results.
func (s *Server) addExtensionMethods() {
	logErr := func(err error) {
		if err != nil { // only a name in go-sdk's own method table fails
			s.log.Error("MCP: registering a Skills extension method", "err", err)
		}
	}
	logErr(sdk.AddReceivingCustomMethod(s.sdk, MethodSkillsList,
		func(ctx context.Context, _ *sdk.ServerSession, p *extensionParams) (*listSkillsResult, error) {
			return s.listSkills(ctx, paramsOrZero(p).Cursor)
		}))
	logErr(sdk.AddReceivingCustomMethod(s.sdk, MethodSkillsGet,
		func(ctx context.Context, _ *sdk.ServerSession, p *extensionParams) (*getSkillResult, error) {
			return s.getSkill(ctx, paramsOrZero(p).URI)
		}))
	logErr(sdk.AddReceivingCustomMethod(s.sdk, MethodDirectoryRead,
		func(ctx context.Context, _ *sdk.ServerSession, p *extensionParams) (*directoryResult, error) {
			p = paramsOrZero(p)
			return s.readDirectory(ctx, p.URI, p.Cursor)
		}))
}

// paramsOrZero: go-sdk passes nil params when the request has none.
func paramsOrZero(p *extensionParams) *extensionParams {
	if p == nil {
		return &extensionParams{}
	}
	return p
}

// listSkills answers skills/list: every servable skill in path order, one
// page at a time; the cursor names the last path of the previous page.
func (s *Server) listSkills(ctx context.Context, rawCursor string) (*listSkillsResult, error) {
	after, _, err := decodeCursor(rawCursor)
	if err != nil {
		return nil, err
	}
	res := &listSkillsResult{ResultType: "complete", Skills: []skillWire{}, CacheScope: "public"}
	last := after.After
	for len(res.Skills) < s.opts.PageSize {
		page, more, err := s.registry.CatalogSkills(ctx, last, s.opts.PageSize-len(res.Skills))
		if err != nil {
			return nil, backendError(err)
		}
		for _, e := range page {
			last = e.Path
			if e.Problem == "" {
				res.Skills = append(res.Skills, toWire(e))
			}
		}
		if !more || len(page) == 0 {
			return res, nil
		}
	}
	res.NextCursor = encodeCursor(cursor{After: last})
	return res, nil
}

// getSkill answers skills/get {uri}: the uri of a skill's SKILL.md.
func (s *Server) getSkill(ctx context.Context, uri string) (*getSkillResult, error) {
	p, err := registry.ParseSkillURI(uri)
	skillPath, ok := strings.CutSuffix(p, "/"+SkillFileName)
	if err != nil || !ok || skillPath == "" {
		why := "expected skill://<skill-path>/SKILL.md"
		var pe *registry.PathError
		if errors.As(err, &pe) {
			why = pe.Reason
		}
		return nil, invalidParams("No skill is served at %s (%s)", registry.Quoted(uri), why)
	}
	e, found, err := s.registry.CatalogSkill(ctx, skillPath)
	if err != nil {
		return nil, backendError(err)
	}
	if !found {
		return nil, invalidParams("No skill is served at %s", registry.Quoted(uri))
	}
	if e.Problem != "" {
		return nil, invalidParams("Skill at %s is not served: %s", registry.Quoted(uri), e.Problem)
	}
	return &getSkillResult{ResultType: "complete", Skill: toWire(e), CacheScope: "public"}, nil
}

// resolveSkillURI finds the skill a skill:// URI points into: the longest
// path prefix that is a skill (nested skills serve their own files). The
// path is percent-decoded once first (registry.ParseSkillURI); a path that
// can name no file (NUL, "..", not UTF-8, too long) is a
// *registry.PathError. rest is the decoded file path inside the skill.
func (s *Server) resolveSkillURI(ctx context.Context, uri string) (e skillsext.Skill, rest string, found bool, err error) {
	// "skill://<path>/" is the directory resources/directory/read lists.
	p, err := registry.ParseSkillURI(strings.TrimSuffix(uri, "/"))
	if err != nil {
		return skillsext.Skill{}, "", false, err
	}
	for cut := len(p); cut > 0; cut = strings.LastIndexByte(p[:cut], '/') {
		e, found, err = s.registry.CatalogSkill(ctx, p[:cut])
		if err != nil || found {
			return e, strings.TrimPrefix(p[cut:], "/"), found, err
		}
	}
	return skillsext.Skill{}, "", false, nil
}

// skillPathError turns the verdict of resolveSkillURI on a path that can
// name no file into invalid params (-32602, which 2026-07-28 also uses
// for an unknown resource); other errors are the backend's.
func skillPathError(err error) error {
	var pe *registry.PathError
	if errors.As(err, &pe) {
		return invalidParams("Resource not found: %s", pe.Error())
	}
	return backendError(err)
}

// readDirectory answers resources/directory/read: the direct children of a
// skill's root or of one of its subdirectories.
func (s *Server) readDirectory(ctx context.Context, uri, rawCursor string) (*directoryResult, error) {
	after, _, err := decodeCursor(rawCursor)
	if err != nil {
		return nil, err
	}
	e, dir, found, err := s.resolveSkillURI(ctx, uri)
	if err != nil {
		return nil, skillPathError(err)
	}
	if !found || e.Problem != "" {
		return nil, invalidParams("%s is not a directory resource: no skill is served there", registry.Quoted(uri))
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	children := map[string]*sdk.Resource{}
	for _, f := range e.Files {
		if f.Path == dir {
			return nil, invalidParams("%s is not a directory resource", registry.Quoted(uri))
		}
		rest, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		child := SkillURI(e.Path, prefix+name)
		if isDir {
			children[child] = &sdk.Resource{URI: child, Name: name, MIMEType: mimeDirectory}
		} else {
			children[child] = &sdk.Resource{URI: child, Name: name, MIMEType: f.MIME, Size: f.Size}
		}
	}
	if len(children) == 0 && dir != "" {
		return nil, invalidParams("%s is not a directory resource", registry.Quoted(uri))
	}
	uris := make([]string, 0, len(children))
	for u := range children {
		if u > after.After {
			uris = append(uris, u)
		}
	}
	sort.Strings(uris)
	res := &directoryResult{ResultType: "complete", Resources: []*sdk.Resource{}}
	for i, u := range uris {
		if i == s.opts.PageSize {
			res.NextCursor = encodeCursor(cursor{After: uris[i-1]})
			break
		}
		res.Resources = append(res.Resources, children[u])
	}
	return res, nil
}

// readSkillFile answers resources/read for a skill:// URI: the exact bytes
// the entry's digest covers, as text when they are UTF-8 of a textual type,
// else base64.
func (s *Server) readSkillFile(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	e, file, found, err := s.resolveSkillURI(ctx, uri)
	if err != nil {
		return nil, skillPathError(err)
	}
	switch {
	case !found:
		return nil, invalidParams("Resource not found: %s (no skill is served at this path)", registry.Quoted(uri))
	case file == "":
		return nil, invalidParams("Resource not found: %s (a skill's directory; read skill://%s/SKILL.md or list it with resources/directory/read)",
			registry.Quoted(uri), registry.EscapePath(e.Path))
	case e.Problem != "":
		return nil, invalidParams("Resource not found: %s (%s)", registry.Quoted(uri), e.Problem)
	}
	mime := catalog.MIMEType(file)
	for _, f := range e.Files {
		if f.Path == file {
			if f.MIME != "" {
				mime = f.MIME
			}
			if err := s.reserveAnswer(ctx, f.Size); err != nil {
				return nil, err
			}
		}
	}
	b, err := s.registry.CatalogFile(ctx, e.Path, file)
	if errors.Is(err, skillsext.ErrNoSuchFile) {
		return nil, invalidParams("Resource not found: %s (skill %s has no file %s)", registry.Quoted(uri), e.Path, registry.Quoted(file))
	}
	if err != nil {
		return nil, backendError(err)
	}
	c := &sdk.ResourceContents{URI: uri, MIMEType: mime}
	if catalog.IsText(mime) && utf8.Valid(b) {
		c.Text = string(b)
	} else {
		c.Blob = b
		if c.Blob == nil {
			c.Blob = []byte{}
		}
	}
	res := &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}
	res.CacheScope = "public"
	return res, nil
}

// backendError maps a backend failure to -32603 (a verdict on the request
// is reported by the callers as -32602).
func backendError(err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	return internalError("skill catalog: " + callErrorText(err))
}
