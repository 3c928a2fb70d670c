package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fetchResources calls skills::resources-list: the index entry first, then
// every registered skill sorted by id.
func (s *Server) fetchResources(ctx context.Context) ([]sdk.Resource, error) {
	// Rows of skills a worker did not publish carry an origin (folder,
	// bundle, builtin); the others, and every row of an upstream registry,
	// were published.
	env, err := s.registry.Resources(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sdk.Resource, 0, len(env.Resources))
	for _, r := range env.Resources {
		res := sdk.Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MimeType}
		if r.URI != registry.IndexURI {
			if r.Origin == "" {
				r.Origin = string(catalog.OriginPublished)
			}
			res.Meta = originMeta(r.Origin)
		}
		out = append(out, res)
	}
	return out, nil
}

// syncResources reloads the whole resource mirror (at start and on every
// reconnect; changes are applied one at a time by applySkillChange).
// Fetch and apply happen under one lock, so a slow, stale answer is never
// applied over a newer one.
func (s *Server) syncResources(ctx context.Context) error {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	list, err := s.fetchResources(ctx)
	if err != nil {
		return err
	}
	next := make(map[string]sdk.Resource, len(list))
	for _, r := range list {
		if _, dup := next[r.URI]; !dup { // a skill registered as "skills" shadows nothing: the index wins
			next[r.URI] = r
		}
	}
	var removed []string
	for uri := range s.resources {
		if _, ok := next[uri]; !ok {
			removed = append(removed, uri)
		}
	}
	if len(removed) > 0 {
		s.sdk.RemoveResources(removed...)
	}
	for uri, r := range next {
		if old, had := s.resources[uri]; !had || !sameResource(old, r) {
			res := r
			s.sdk.AddResource(&res, s.readResourceHandler)
		}
	}
	s.resources = next
	return nil
}

// applySkillChange applies one skills::on-change event to the mirror: the
// skill's own entry is re-read (register) or dropped (unregister), nothing
// else is fetched. Re-adding an unchanged entry still makes the SDK send
// notifications/resources/list_changed, as a re-registration should.
func (s *Server) applySkillChange(ctx context.Context, op, id string) error {
	uri := registry.SkillURI(id)
	s.resMu.Lock()
	defer s.resMu.Unlock()
	if op == "unregister" {
		if _, had := s.resources[uri]; had {
			delete(s.resources, uri)
			s.sdk.RemoveResources(uri)
		}
		return nil
	}
	env, err := s.registry.Read(ctx, uri)
	if isNotFound(err) {
		// Withdrawn (every version yanked) or gone meanwhile.
		if _, had := s.resources[uri]; had {
			delete(s.resources, uri)
			s.sdk.RemoveResources(uri)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if len(env.Contents) != 1 {
		return fmt.Errorf("%s: %w", rules.FnSkillsResourcesRead, errRegistryShape)
	}
	rr := registry.SkillResource(registry.NewIndexEntry(id, env.Contents[0].Text))
	r := sdk.Resource{URI: rr.URI, Name: rr.Name, Description: rr.Description, MIMEType: rr.MimeType}
	s.resources[uri] = r
	s.sdk.AddResource(&r, s.readResourceHandler)
	return nil
}

func sameResource(a, b sdk.Resource) bool {
	return a.URI == b.URI && a.Name == b.Name && a.Description == b.Description && a.MIMEType == b.MIMEType
}

// readResourceHandler serves resources/read for every URI the SDK
// dispatches here (mirrored ones and the catch-all templates).
func (s *Server) readResourceHandler(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	if asked, ok := ctx.Value(askedURIKey{}).(string); ok {
		uri = asked
	}
	ctx = s.withHold(ctx, req.Extra)
	if s.skillExt && strings.HasPrefix(uri, SkillScheme) {
		return s.readSkillFile(ctx, uri)
	}
	return s.readResource(ctx, uri)
}

// readResource resolves any URI as skills::resources-read does (a section
// is checked against the tool exposure first).
func (s *Server) readResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	if err := s.checkSection(uri); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if err := s.reserveFileRead(ctx, uri); err != nil {
		return nil, err
	}
	env, err := s.registry.Read(ctx, uri)
	if err != nil {
		return nil, registryError(rules.FnSkillsResourcesRead, err)
	}
	res := &sdk.ReadResourceResult{Contents: make([]*sdk.ResourceContents, 0, len(env.Contents))}
	for _, c := range env.Contents {
		rc := &sdk.ResourceContents{URI: c.URI, MIMEType: c.MimeType, Text: c.Text}
		if c.Yanked != "" { // a pinned read of a yanked version (docs/trust.md)
			rc.Meta = sdk.Meta{MetaKeyYanked: c.Yanked}
		}
		res.Contents = append(res.Contents, rc)
	}
	res.CacheScope = "public" // ttlMs 0: every read is live
	return res, nil
}

// listResources answers resources/list live, in the registry's order, one
// page at a time. The cursor names the last URI of the previous page, so a
// registration between pages neither repeats nor skips an entry.
func (s *Server) listResources(ctx context.Context, rawCursor string) (*sdk.ListResourcesResult, error) {
	after, hasCursor, err := decodeCursor(rawCursor)
	if err != nil {
		return nil, err
	}
	list, err := s.fetchResources(ctx)
	if err != nil {
		return nil, registryError(rules.FnSkillsResourcesList, err)
	}
	if s.skillExt {
		skills, err := s.allSkills(ctx)
		if err != nil {
			return nil, backendError(err)
		}
		for _, e := range skills {
			if e.Problem == "" {
				list = append(list, skillMDResource(e))
			}
		}
	}
	start := 0
	if hasCursor {
		start = len(list)
		for i, r := range list {
			// The index comes first (cursor "head"); the rest is sorted by URI.
			if i > 0 && (after.Head || r.URI > after.After) {
				start = i
				break
			}
		}
	}
	end := min(start+s.opts.PageSize, len(list))
	res := &sdk.ListResourcesResult{Resources: make([]*sdk.Resource, 0, end-start)}
	for i := start; i < end; i++ {
		r := list[i]
		res.Resources = append(res.Resources, &r)
	}
	if end < len(list) {
		res.NextCursor = encodeCursor(cursor{After: list[end-1].URI, Head: end == 1})
	}
	res.CacheScope = "public"
	return res, nil
}

// listTemplates answers resources/templates/list from
// skills::resources-templates.
func (s *Server) listTemplates(ctx context.Context, rawCursor string) (*sdk.ListResourceTemplatesResult, error) {
	after, hasCursor, err := decodeCursor(rawCursor)
	if err != nil {
		return nil, err
	}
	env, err := s.registry.Templates(ctx)
	if err != nil {
		return nil, registryError(rules.FnSkillsResourcesTemplates, err)
	}
	start := 0
	if hasCursor {
		start = len(env.ResourceTemplates)
		for i, t := range env.ResourceTemplates {
			if t.URITemplate == after.After {
				start = i + 1
				break
			}
		}
	}
	end := min(start+s.opts.PageSize, len(env.ResourceTemplates))
	res := &sdk.ListResourceTemplatesResult{ResourceTemplates: make([]*sdk.ResourceTemplate, 0, end-start)}
	for _, t := range env.ResourceTemplates[start:end] {
		res.ResourceTemplates = append(res.ResourceTemplates, &sdk.ResourceTemplate{
			URITemplate: t.URITemplate, Name: t.Name, Description: t.Description, MIMEType: t.MimeType})
	}
	if end < len(env.ResourceTemplates) {
		res.NextCursor = encodeCursor(cursor{After: env.ResourceTemplates[end-1].URITemplate})
	}
	res.CacheScope = "public"
	return res, nil
}

// cursor is the opaque pagination token: the key of the last entry of the
// previous page, and whether that entry was the list's head (the index).
// On the wire it is base64url JSON; anything else is invalid params.
type cursor struct {
	After string `json:"after"`
	Head  bool   `json:"head,omitempty"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string) (cur cursor, ok bool, err error) {
	if c == "" {
		return cursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	var v struct {
		After *string `json:"after"`
		Head  bool    `json:"head"`
	}
	if err != nil || json.Unmarshal(b, &v) != nil || v.After == nil {
		return cursor{}, false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", c)}
	}
	return cursor{After: *v.After, Head: v.Head}, true, nil
}
