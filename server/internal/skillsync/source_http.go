package skillsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	uris "github.com/iii-skills/skills/server/internal/registry"
)

// The registry's HTTP listener through the MCP Skills extension
// (docs/mcp.md): skills/list with every file's sha256, skills/get for a
// skill at a selector (skill://<id>@<version>/SKILL.md), resources/read for
// the bytes, the search_skills tool, and notifications/resources/
// list_changed / updated for --watch. The client is the official go-sdk's.

// protocolVersion is the MCP revision the sync speaks (see openHTTP).
const protocolVersion = "2025-11-25"

// pingEvery is how often a watched session is checked: a registry that
// restarted is then found within that time even when nothing changes.
const pingEvery = 5 * time.Second

// maxResponseBytes bounds one plain JSON answer (a 16 MiB file in base64
// with its envelope fits); server-sent events are bounded per event.
const maxResponseBytes = 32 << 20

// httpSource is a Source over the registry's MCP endpoint.
type httpSource struct {
	endpoint string
	cs       *sdk.ClientSession
	status   *statusRecorder

	mu       sync.Mutex
	watchers map[int]func()
	nextW    int
	lost     error // why the session ended (nil while it lasts)
}

type extParams struct {
	sdk.ParamsBase
	URI    string `json:"uri,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type extSkill struct {
	URI         string                     `json:"uri"`
	Frontmatter json.RawMessage            `json:"frontmatter"`
	Resources   json.RawMessage            `json:"resources"`
	Meta        map[string]json.RawMessage `json:"_meta"`
}

type extList struct {
	sdk.ResultBase
	Skills     []extSkill `json:"skills"`
	NextCursor string     `json:"nextCursor"`
}

type extGet struct {
	sdk.ResultBase
	Skill *extSkill `json:"skill"`
}

// statusRecorder adds the bearer token to every request, bounds plain
// answers, and remembers the last refusal so that errors can say why.
type statusRecorder struct {
	base   http.RoundTripper
	token  string
	last   atomic.Int32
	lastWW atomic.Value // WWW-Authenticate of the last 401
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		s.last.Store(int32(resp.StatusCode))
		s.lastWW.Store(resp.Header.Get("WWW-Authenticate"))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &limitedBody{r: resp.Body, left: maxResponseBytes}
	}
	return resp, nil
}

// limitedBody fails a read past its limit instead of truncating.
type limitedBody struct {
	r    io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("the registry's answer is larger than %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.r.Close() }

// explain adds to a failed connect what the HTTP status says.
func (s *statusRecorder) explain(endpoint string, err error) error {
	switch s.last.Load() {
	case http.StatusUnauthorized:
		if s.token == "" {
			return fmt.Errorf("the registry at %s wants a bearer token (401): give it with --token or env SKILLS_MCP_TOKEN: %w", endpoint, err)
		}
		return fmt.Errorf("the registry at %s refused the token given with --token (401): %w", endpoint, err)
	case http.StatusForbidden:
		return fmt.Errorf("the registry at %s refused the request (403: a Host or Origin it does not accept?): %w", endpoint, err)
	case http.StatusNotFound:
		return fmt.Errorf("nothing answers MCP at %s (404): give the registry's MCP endpoint, e.g. http://127.0.0.1:49135/mcp: %w", endpoint, err)
	}
	return fmt.Errorf("the registry at %s: %w", endpoint, err)
}

func openHTTP(ctx context.Context, endpoint, token string) (*httpSource, error) {
	s := &httpSource{endpoint: endpoint, watchers: map[int]func(){}}
	s.status = &statusRecorder{base: http.DefaultTransport, token: token}
	notify := func() {
		s.mu.Lock()
		ws := make([]func(), 0, len(s.watchers))
		for _, w := range s.watchers {
			ws = append(ws, w)
		}
		s.mu.Unlock()
		for _, w := range ws {
			w()
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "skills-sync", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { notify() },
		ResourceUpdatedHandler:     func(context.Context, *sdk.ResourceUpdatedNotificationRequest) { notify() },
	})
	for _, m := range []string{skillsmcp.MethodSkillsList, skillsmcp.MethodSkillsGet} {
		var err error
		if m == skillsmcp.MethodSkillsList {
			err = sdk.AddSendingCustomMethod[*extParams, *extList](client, m)
		} else {
			err = sdk.AddSendingCustomMethod[*extParams, *extGet](client, m)
		}
		if err != nil {
			return nil, err
		}
	}
	// Few retries: a registry that went away is noticed soon, and --watch
	// opens a new session (and a new notification stream) instead.
	transport := &sdk.StreamableClientTransport{Endpoint: endpoint, MaxEventSize: maxResponseBytes, MaxRetries: 2,
		HTTPClient: &http.Client{Transport: s.status}}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The 2025-11-25 revision: its sessions make a registry that restarted
	// visible (its next request fails, "session not found"), where the
	// stateless 2026-07-28 revision's notification stream goes quiet
	// without an error.
	cs, err := client.Connect(cctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, s.status.explain(endpoint, err)
	}
	s.cs = cs
	go func() {
		err := cs.Wait()
		s.mu.Lock()
		s.lost = fmt.Errorf("the MCP session with %s ended: %v", endpoint, err)
		s.mu.Unlock()
		notify() // a round finds the session gone and opens another
	}()
	init := cs.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Extensions[skillsmcp.ExtensionSkills] == nil {
		_ = cs.Close()
		return nil, fmt.Errorf("the MCP server at %s does not declare the MCP Skills extension (%s): it cannot be synced from (is it the skills registry?)", endpoint, skillsmcp.ExtensionSkills)
	}
	return s, nil
}

func (s *httpSource) Close() error { return s.cs.Close() }

// failed names the registry in the error of a call.
func (s *httpSource) failed(err error) error {
	if strings.Contains(err.Error(), "session not found") {
		return fmt.Errorf("the registry at %s no longer knows this session (it restarted?): %w", s.endpoint, err)
	}
	return fmt.Errorf("the registry at %s: %w", s.endpoint, err)
}

// Lost is why the session ended, or nil while it lasts.
func (s *httpSource) Lost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

func (s *httpSource) List(ctx context.Context) ([]Listed, error) {
	var out []Listed
	cursor := ""
	for pages := 0; ; pages++ {
		res, err := sdk.CallCustomMethod[*extParams, *extList](ctx, s.cs, skillsmcp.MethodSkillsList, &extParams{Cursor: cursor})
		if err != nil {
			return nil, s.failed(fmt.Errorf("%s: %w", skillsmcp.MethodSkillsList, err))
		}
		for _, w := range res.Skills {
			l, err := s.decode(w)
			if err != nil {
				return nil, fmt.Errorf("%s of %s: %w", skillsmcp.MethodSkillsList, s.endpoint, err)
			}
			out = append(out, l)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if res.NextCursor == cursor {
			return nil, fmt.Errorf("%s of %s: the registry sends the same cursor again (%q): its listing never ends", skillsmcp.MethodSkillsList, s.endpoint, clip(cursor, 40))
		}
		if len(out) > maxListed || pages > maxListed/10 {
			return nil, fmt.Errorf("%s of %s: the listing goes on past %d skills in %d pages; the sync reads at most %d", skillsmcp.MethodSkillsList, s.endpoint, len(out), pages, maxListed)
		}
		cursor = res.NextCursor
	}
}

func (s *httpSource) Get(ctx context.Context, p string) (Listed, bool, error) {
	uri := skillsmcp.SkillURI(p, SkillFile)
	res, err := sdk.CallCustomMethod[*extParams, *extGet](ctx, s.cs, skillsmcp.MethodSkillsGet, &extParams{URI: uri})
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
		return Listed{}, false, nil // "No skill is served at …"
	}
	if err != nil {
		return Listed{}, false, s.failed(fmt.Errorf("%s %s: %w", skillsmcp.MethodSkillsGet, uri, err))
	}
	if res.Skill == nil {
		return Listed{}, false, fmt.Errorf("%s %s: the registry's answer has no skill", skillsmcp.MethodSkillsGet, uri)
	}
	l, err := s.decode(*res.Skill)
	if err != nil {
		return Listed{}, false, fmt.Errorf("%s %s: %w", skillsmcp.MethodSkillsGet, uri, err)
	}
	if l.Path != p {
		return Listed{}, false, fmt.Errorf("%s %s: the registry answered with skill %s", skillsmcp.MethodSkillsGet, uri, l.Path)
	}
	return l, true, nil
}

// decode turns one extension entry into a Listed, refusing what does not
// have the extension's shape.
func (s *httpSource) decode(w extSkill) (Listed, error) {
	// URIs are percent-encoded (RFC 3986); paths are compared decoded.
	p, err := uris.ParseSkillURI(w.URI)
	ok := err == nil
	if ok {
		p, ok = strings.CutSuffix(p, "/"+SkillFile)
	}
	if !ok || p == "" {
		return Listed{}, fmt.Errorf("a skill entry has uri %q; expected skill://<path>/SKILL.md", clip(w.URI, 120))
	}
	l := Listed{Path: p}
	l.ID, _ = splitPath(p)
	var fm struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(w.Frontmatter, &fm); err != nil {
		return Listed{}, fmt.Errorf("skill %s: frontmatter %s is not an object with a string name: %v", p, clip(string(w.Frontmatter), 80), err)
	}
	l.Name = fm.Name
	if raw, ok := w.Meta[skillsmcp.MetaKeyOrigin]; ok {
		_ = json.Unmarshal(raw, &l.Origin)
	}
	if l.Meta, err = parseMeta(p, func(k string) (json.RawMessage, bool) { v, ok := w.Meta[MetaPrefix+k]; return v, ok }); err != nil {
		return Listed{}, err
	}
	var dynamic string
	if json.Unmarshal(w.Resources, &dynamic) == nil {
		if dynamic != "dynamic" {
			return Listed{}, fmt.Errorf("skill %s: resources is %q; expected a list or \"dynamic\"", p, clip(dynamic, 40))
		}
		l.Dynamic = true
		return l, nil
	}
	var res []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   *int64 `json:"size"`
	}
	if err := json.Unmarshal(w.Resources, &res); err != nil {
		return Listed{}, fmt.Errorf("skill %s: resources %s are not a list of {uri, digest, size}: %v", p, clip(string(w.Resources), 80), err)
	}
	prefix := skillsmcp.SkillScheme + p + "/"
	for _, r := range res {
		var file string
		if decoded, err := uris.ParseSkillURI(r.URI); err == nil {
			file, ok = strings.CutPrefix(decoded, p+"/")
		} else {
			// A path no file can have ("..", NUL): kept as listed, for
			// the file checks that report the skill.
			file, ok = strings.CutPrefix(r.URI, prefix)
		}
		if !ok {
			return Listed{}, fmt.Errorf("skill %s: resource %q is not a file under %s", p, clip(r.URI, 120), prefix)
		}
		sum, ok := strings.CutPrefix(r.Digest, "sha256:")
		if !ok || r.Size == nil {
			return Listed{}, fmt.Errorf("skill %s: resource %s has digest %q and size %v; expected sha256:<hex> and a size", p, file, clip(r.Digest, 80), r.Size)
		}
		l.Files = append(l.Files, File{Path: file, Size: *r.Size, SHA256: sum})
	}
	return l, nil
}

func (s *httpSource) ReadFile(ctx context.Context, p, file string) ([]byte, error) {
	uri := skillsmcp.SkillURI(p, file)
	res, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, s.failed(fmt.Errorf("resources/read %s: %w", uri, err))
	}
	if len(res.Contents) != 1 || res.Contents[0] == nil || res.Contents[0].URI != uri {
		return nil, fmt.Errorf("resources/read %s: the registry answered %d contents, not the one asked for", uri, len(res.Contents))
	}
	c := res.Contents[0]
	if c.Blob != nil {
		return c.Blob, nil
	}
	return []byte(c.Text), nil
}

func (s *httpSource) Search(ctx context.Context, query string, limit int) ([]string, bool, error) {
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: skillsmcp.ToolSearchSkills, Arguments: map[string]any{"query": query, "limit": limit}})
	if err != nil {
		return nil, false, s.failed(fmt.Errorf("tool %s: %w", skillsmcp.ToolSearchSkills, err))
	}
	if res.IsError {
		msg := ""
		for _, c := range res.Content {
			if t, ok := c.(*sdk.TextContent); ok {
				msg += t.Text
			}
		}
		return nil, false, fmt.Errorf("tool %s: %s", skillsmcp.ToolSearchSkills, clip(msg, 300))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, false, fmt.Errorf("tool %s: %w", skillsmcp.ToolSearchSkills, err)
	}
	return decodeSearch(raw)
}

// decodeSearch reads the ids of a skills::search answer (the same shape
// as the search_skills tool's structured content).
func decodeSearch(raw []byte) ([]string, bool, error) {
	var out struct {
		Results *[]struct {
			ID string `json:"id"`
		} `json:"results"`
		LowConfidence bool `json:"low_confidence"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Results == nil {
		return nil, false, fmt.Errorf("the registry's search answered %s; expected {results: [{id, …}], low_confidence}", clip(string(raw), 120))
	}
	ids := make([]string, 0, len(*out.Results))
	for _, r := range *out.Results {
		ids = append(ids, r.ID)
	}
	return ids, out.LowConfidence, nil
}

func (s *httpSource) Watch(ctx context.Context, changed func()) (func(), error) {
	s.mu.Lock()
	id := s.nextW
	s.nextW++
	s.watchers[id] = changed
	s.mu.Unlock()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.watchers, id)
			s.mu.Unlock()
		})
	}
	context.AfterFunc(ctx, stop)
	// A session whose registry went away fails its next request: a ping
	// now and then finds it even when nothing changes.
	pctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
				c, done := context.WithTimeout(pctx, pingEvery)
				err := s.cs.Ping(c, nil)
				done()
				if err != nil && pctx.Err() == nil {
					changed() // the round finds out what happened
				}
			}
		}
	}()
	return func() { cancel(); stop() }, nil
}
