package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// registryCache keeps successful registry answers for RegistryCacheTTL.
type registryCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	at    time.Time
	value any
}

func (c *registryCache) get(key string, ttl time.Duration) (any, bool) {
	if ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || time.Since(e.at) > ttl {
		return nil, false
	}
	return e.value, true
}

func (c *registryCache) put(key string, v any, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for k, e := range c.entries { // keep the map from growing without bound
		if now.Sub(e.at) > ttl {
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry{at: now, value: v}
}

// getJSON GETs url from the registry and decodes the body into dst, with
// upstream's error texts.
func (d *Directory) getJSON(ctx context.Context, u string, dst any) error {
	return d.getJSONWith(ctx, d.http, u, dst)
}

// getJSONWith is getJSON through hc (downloads pass one that checks every
// redirect against download_hosts).
func (d *Directory) getJSONWith(ctx context.Context, hc *http.Client, u string, dst any) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.DownloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf(fmtHTTPGet, u, "request", err)
	}
	req.Header.Set("User-Agent", "iii-directory/"+d.opts.Version)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf(fmtHTTPGet, u, "send", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf(fmtHTTPGet, u, "read body", err)
	}
	if resp.StatusCode == http.StatusNotFound {
		// The registry holds no such worker (or version, or tag).
		return notFound(fmt.Errorf(fmtHTTPStatus, u, resp.StatusCode, string(body)))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf(fmtHTTPStatus, u, resp.StatusCode, string(body))
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf(fmtDecodeRegistry, err)
	}
	return nil
}

// registryWorker is a registry listing row.
type registryWorker struct {
	Name        string          `json:"name"`
	Description json.RawMessage `json:"description"`
	Version     json.RawMessage `json:"version"`
	Repo        json.RawMessage `json:"repo"`
	Author      json.RawMessage `json:"author,omitempty"`
}

// parseWorkers accepts an envelope {workers:[…]} or a bare array; rows
// without a name are dropped; latest_version stands for version and
// repository for repo.
func parseWorkers(raw json.RawMessage) []registryWorker {
	var rows []map[string]json.RawMessage
	if json.Unmarshal(raw, &rows) != nil {
		var env struct {
			Workers []map[string]json.RawMessage `json:"workers"`
		}
		if json.Unmarshal(raw, &env) != nil {
			return []registryWorker{}
		}
		rows = env.Workers
	}
	out := []registryWorker{}
	for _, r := range rows {
		var name string
		if json.Unmarshal(r["name"], &name) != nil || name == "" {
			continue
		}
		pick := func(keys ...string) json.RawMessage {
			for _, k := range keys {
				if v, ok := r[k]; ok {
					return v
				}
			}
			return json.RawMessage("null")
		}
		w := registryWorker{Name: name, Description: pick("description"), Version: pick("version", "latest_version"), Repo: pick("repo", "repository")}
		if a, ok := r["author"]; ok && string(a) != "null" {
			w.Author = a
		}
		out = append(out, w)
	}
	return out
}

func (d *Directory) registryList(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Search string `json:"search"`
		Limit  *int   `json:"limit"`
	}
	if err := decode(data, "RegistryWorkersListInput", &in); err != nil {
		return nil, err
	}
	q := strings.TrimSpace(in.Search)
	if q == "" {
		return nil, invalidArguments(errors.New(msgSearchEmpty))
	}
	limit := 20
	if in.Limit != nil {
		limit = min(max(*in.Limit, 1), 100)
	}
	key := "worker-list:" + q + ":" + strconv.Itoa(limit)
	if v, ok := d.cache.get(key, d.cfg.RegistryCacheTTL); ok {
		return v, nil
	}
	var raw json.RawMessage
	u := d.cfg.RegistryURL + "/search?q=" + url.QueryEscape(q) + "&limit=" + strconv.Itoa(limit)
	if err := d.getJSON(ctx, u, &raw); err != nil {
		return nil, err
	}
	out := map[string]any{"workers": parseWorkers(raw)}
	d.cache.put(key, out, d.cfg.RegistryCacheTTL)
	return out, nil
}

// selector is the version= or tag= query of a registry call.
func selector(version, tag string) (key, value string, err error) {
	version, tag = strings.TrimSpace(version), strings.TrimSpace(tag)
	switch {
	case version != "" && tag != "":
		return "", "", errors.New(msgVersionOrTag)
	case version != "":
		return "version", version, nil
	case tag != "":
		return "tag", tag, nil
	}
	return "tag", "latest", nil
}

func (d *Directory) registryInfo(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tag     string `json:"tag"`
	}
	if err := decode(data, "RegistryWorkerInfoInput", &in); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return nil, invalidArguments(errors.New(msgNameEmpty))
	}
	// The name becomes a URL path segment: only worker names pass, so
	// "../" or "/" never reach the registry's path.
	if err := validateWorkerName(name); err != nil {
		return nil, invalidArguments(err)
	}
	k, v, err := selector(in.Version, in.Tag)
	if err != nil {
		return nil, invalidArguments(err)
	}
	key := "worker-info:" + name + ":" + k + "=" + v
	if cached, ok := d.cache.get(key, d.cfg.RegistryCacheTTL); ok {
		return cached, nil
	}
	var raw map[string]json.RawMessage
	u := d.cfg.RegistryURL + "/w/" + url.PathEscape(name) + "?" + k + "=" + url.QueryEscape(v)
	if err := d.getJSON(ctx, u, &raw); err != nil {
		return nil, err
	}
	out := infoOf(raw)
	d.cache.put(key, out, d.cfg.RegistryCacheTTL)
	return out, nil
}

type apiFunction struct {
	Name           string          `json:"name"`
	Description    json.RawMessage `json:"description"`
	RequestSchema  json.RawMessage `json:"request_schema"`
	ResponseSchema json.RawMessage `json:"response_schema"`
	Metadata       json.RawMessage `json:"metadata"`
}

type apiTrigger struct {
	Name             string          `json:"name"`
	Description      json.RawMessage `json:"description"`
	InvocationSchema json.RawMessage `json:"invocation_schema"`
	ReturnSchema     json.RawMessage `json:"return_schema"`
	Metadata         json.RawMessage `json:"metadata"`
}

type workerInfo struct {
	Worker       json.RawMessage `json:"worker"`
	Readme       json.RawMessage `json:"readme,omitempty"`
	APIReference struct {
		Functions []apiFunction `json:"functions"`
		Triggers  []apiTrigger  `json:"triggers"`
	} `json:"api_reference"`
	SkillsTree struct {
		Skills  []map[string]json.RawMessage `json:"skills"`
		Prompts []map[string]json.RawMessage `json:"prompts"`
	} `json:"skills_tree"`
}

// infoOf shapes a registry worker answer: api_reference from the nested
// object or top-level functions/triggers; skillsTree is an alias.
func infoOf(raw map[string]json.RawMessage) workerInfo {
	var out workerInfo
	out.Worker = orNull(raw["worker"])
	if r, ok := raw["readme"]; ok && string(r) != "null" {
		out.Readme = r
	}
	api := raw
	if nested, ok := raw["api_reference"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(nested, &m) == nil {
			api = m
		}
	}
	_ = json.Unmarshal(api["functions"], &out.APIReference.Functions)
	_ = json.Unmarshal(api["triggers"], &out.APIReference.Triggers)
	tree, ok := raw["skills_tree"]
	if !ok {
		tree = raw["skillsTree"]
	}
	_ = json.Unmarshal(tree, &out.SkillsTree)
	fix := func(rows []map[string]json.RawMessage) []map[string]json.RawMessage {
		if rows == nil {
			return []map[string]json.RawMessage{}
		}
		return rows
	}
	for i := range out.APIReference.Functions {
		f := &out.APIReference.Functions[i]
		f.Description, f.RequestSchema, f.ResponseSchema, f.Metadata = orNull(f.Description), orNull(f.RequestSchema), orNull(f.ResponseSchema), orNull(f.Metadata)
	}
	for i := range out.APIReference.Triggers {
		t := &out.APIReference.Triggers[i]
		t.Description, t.InvocationSchema, t.ReturnSchema, t.Metadata = orNull(t.Description), orNull(t.InvocationSchema), orNull(t.ReturnSchema), orNull(t.Metadata)
	}
	if out.APIReference.Functions == nil {
		out.APIReference.Functions = []apiFunction{}
	}
	if out.APIReference.Triggers == nil {
		out.APIReference.Triggers = []apiTrigger{}
	}
	out.SkillsTree.Skills = fix(out.SkillsTree.Skills)
	out.SkillsTree.Prompts = fix(out.SkillsTree.Prompts)
	return out
}
