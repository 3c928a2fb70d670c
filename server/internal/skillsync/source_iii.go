package skillsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// The registry over iii, through the catalog functions it publishes for
// surfaces in other processes (skills::catalog-list, -get, -file, and its
// change trigger types followed by core.Remote), plus
// skills::search and skills::versions. This file is the whole iii side of
// the sync: a registry reached another way is another Source.

// iiiTimeout bounds one call to the registry.
const iiiTimeout = 30 * time.Second

// iiiSource is a Source over an iii engine running the registry.
type iiiSource struct {
	url    string
	client *iii.Client
	remote *core.Remote
}

func openIII(ctx context.Context, url, token string) (*iiiSource, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	opts := []iii.Option{iii.WithName("skills-sync-" + hex.EncodeToString(b[:])),
		iii.WithDescription("skills sync: mirrors registry skills into agents' folders"),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	if token != "" {
		opts = append(opts, iii.WithHeaders(http.Header{"Authorization": {"Bearer " + token}}))
	}
	client := iii.RegisterWorker(url, opts...)
	cctx, cancel := context.WithTimeout(ctx, iiiTimeout)
	defer cancel()
	if err := client.Connect(cctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("cannot reach the iii engine at %s: %w", url, err)
	}
	return &iiiSource{url: url, client: client, remote: core.NewRemote(client, core.RemoteOptions{Timeout: iiiTimeout})}, nil
}

func (s *iiiSource) Close() error { return s.client.Close() }

// catalogSkill is an entry of skills::catalog-list / -get with the version
// facts a registry may add beside the extension's fields (meta.go),
// decoded in one pass: a fact absent stays nil, one sent as null is "null".
type catalogSkill struct {
	skillsext.Skill
	Version    json.RawMessage `json:"version"`
	SHA256     json.RawMessage `json:"sha256"`
	SignedBy   json.RawMessage `json:"signed_by"`
	Key        json.RawMessage `json:"key"`
	Yanked     json.RawMessage `json:"yanked"`
	Deprecated json.RawMessage `json:"deprecated"`
}

// fact is the raw value of one version fact, and whether it was sent.
func (c *catalogSkill) fact(key string) (json.RawMessage, bool) {
	var v json.RawMessage
	switch key {
	case "version":
		v = c.Version
	case "sha256":
		v = c.SHA256
	case "signed_by":
		v = c.SignedBy
	case "key":
		v = c.Key
	case "yanked":
		v = c.Yanked
	case "deprecated":
		v = c.Deprecated
	}
	return v, v != nil
}

func (s *iiiSource) call(ctx context.Context, fn string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	raw, err := s.client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: iiiTimeout})
	if err != nil {
		var inv *iii.InvocationError
		if errors.As(err, &inv) && inv.Code == iii.CodeFunctionNotFound {
			return fmt.Errorf("%s: the registry behind %s does not publish its catalog (an upstream skills worker?): %w", fn, s.url, err)
		}
		return fmt.Errorf("%s: %w", fn, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s answered %s: %v", fn, clip(string(raw), 120), err)
	}
	return nil
}

func (s *iiiSource) List(ctx context.Context) ([]Listed, error) {
	var out []Listed
	after := ""
	for {
		var page struct {
			Skills []catalogSkill `json:"skills"`
			More   bool           `json:"more"`
		}
		if err := s.call(ctx, rules.FnCatalogList, map[string]any{"after": after}, &page); err != nil {
			return nil, err
		}
		for _, c := range page.Skills {
			if c.Problem != "" {
				// Not served (skills/list leaves it out); kept to say why.
				out = append(out, Listed{Path: c.Path, ID: c.Path, Name: c.Name, Problem: c.Problem})
				continue
			}
			l, err := fromCatalog(c)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rules.FnCatalogList, err)
			}
			out = append(out, l)
		}
		if !page.More {
			return out, nil
		}
		if len(out) > maxListed {
			return nil, fmt.Errorf("%s: the listing goes on past %d skills; the sync reads at most %d", rules.FnCatalogList, len(out), maxListed)
		}
		if len(page.Skills) == 0 || page.Skills[len(page.Skills)-1].Path <= after {
			return nil, fmt.Errorf("%s: the registry's listing does not advance past %q", rules.FnCatalogList, clip(after, 80))
		}
		after = page.Skills[len(page.Skills)-1].Path
	}
}

func (s *iiiSource) Get(ctx context.Context, p string) (Listed, bool, error) {
	var out struct {
		Skill *catalogSkill `json:"skill"`
	}
	if err := s.call(ctx, rules.FnCatalogGet, map[string]string{"path": p}, &out); err != nil {
		return Listed{}, false, err
	}
	if out.Skill == nil || out.Skill.Problem != "" {
		return Listed{}, false, nil
	}
	if out.Skill.Path != p {
		return Listed{}, false, fmt.Errorf("%s %s: the registry answered with skill %s", rules.FnCatalogGet, p, out.Skill.Path)
	}
	l, err := fromCatalog(*out.Skill)
	if err != nil {
		return Listed{}, false, fmt.Errorf("%s: %w", rules.FnCatalogGet, err)
	}
	return l, true, nil
}

// fromCatalog turns a catalog entry into a Listed.
func fromCatalog(c catalogSkill) (Listed, error) {
	l := Listed{Path: c.Path, Name: c.Name, Origin: c.Origin, Dynamic: c.Dynamic}
	l.ID, _ = splitPath(c.Path)
	if c.Path == "" {
		return Listed{}, fmt.Errorf("an entry without a path")
	}
	for _, f := range c.Files {
		l.Files = append(l.Files, File{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
	}
	var err error
	l.Meta, err = parseMeta(c.Path, c.fact)
	return l, err
}

func (s *iiiSource) ReadFile(ctx context.Context, p, file string) ([]byte, error) {
	b, err := s.remote.CatalogFile(ctx, p, file)
	if errors.Is(err, skillsext.ErrNoSuchFile) {
		return nil, fmt.Errorf("%s: the registry no longer serves %s of skill %s: %w", rules.FnCatalogFile, file, p, ErrNotServed)
	}
	return b, err
}

func (s *iiiSource) Search(ctx context.Context, query string, limit int) ([]string, bool, error) {
	data, err := json.Marshal(map[string]any{"query": query, "limit": limit})
	if err != nil {
		return nil, false, err
	}
	raw, err := s.client.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsSearch, Data: data, Timeout: iiiTimeout})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", rules.FnSkillsSearch, err)
	}
	return decodeSearch(raw)
}

func (s *iiiSource) Watch(ctx context.Context, changed func()) (func(), error) {
	stop, err := s.remote.Watch(ctx, func(core.Change) { changed() })
	if err != nil {
		return nil, err
	}
	// A reconnect may have lost events: look again.
	remove := s.client.OnConnect(func(context.Context) { changed() })
	return func() { stop(); remove() }, nil
}

// versions is the answer of skills::versions.
type versions struct {
	Latest   int            `json:"latest"`
	Labels   map[string]int `json:"labels"`
	Versions []struct {
		Version int    `json:"version"`
		SHA256  string `json:"sha256"`
	} `json:"versions"`
}

func (s *iiiSource) versions(ctx context.Context, id string) (versions, bool, error) {
	var v versions
	err := s.call(ctx, rules.FnSkillsVersions, map[string]string{"id": id}, &v)
	var inv *iii.InvocationError
	if errors.As(err, &inv) && inv.Code == rules.CodeNotFound {
		return v, false, nil
	}
	return v, err == nil, err
}

// ServedVersion finds the version whose SKILL.md is the one served: the
// newest first, then the labelled ones (a serve label may point at one).
func (s *iiiSource) ServedVersion(ctx context.Context, id, skillMD string) (int, error) {
	v, ok, err := s.versions(ctx, id)
	if !ok || err != nil {
		return 0, err
	}
	candidates := []int{v.Latest}
	labels := make([]string, 0, len(v.Labels))
	for name := range v.Labels {
		labels = append(labels, name)
	}
	sort.Strings(labels)
	for _, name := range labels {
		candidates = append(candidates, v.Labels[name])
	}
	tried := map[int]bool{}
	for _, n := range candidates {
		if n < 1 || tried[n] {
			continue
		}
		tried[n] = true
		l, ok, err := s.Get(ctx, id+"@"+strconv.Itoa(n))
		if err != nil {
			return 0, err
		}
		for _, f := range l.Files {
			if ok && f.Path == SkillFile && f.SHA256 == skillMD {
				return n, nil
			}
		}
	}
	return 0, nil
}

// VersionByDigest finds the kept version whose content has sha256 sum.
func (s *iiiSource) VersionByDigest(ctx context.Context, id, sum string) (int, error) {
	v, ok, err := s.versions(ctx, id)
	if !ok || err != nil {
		return 0, err
	}
	for _, ver := range v.Versions {
		if ver.SHA256 == sum {
			return ver.Version, nil
		}
	}
	return 0, nil
}
