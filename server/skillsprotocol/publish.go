package skillsprotocol

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/catalog"
)

// PublishFunction is the iii function that publishes a bundle. Its id is
// on the registry's namespace (skills::*), which MCP does not expose as a
// tool.
const PublishFunction = "skills::publish-bundle"

// BundleFile is one file of a published bundle.
type BundleFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Encoding is "utf-8" (default) or "base64".
	Encoding string `json:"encoding,omitempty"`
}

// PublishRequest is the payload of skills::publish-bundle.
type PublishRequest struct {
	Files []BundleFile `json:"files"`
}

// PublishResult is what skills::publish-bundle returns.
type PublishResult struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Files     int    `json:"files"`
	Unchanged bool   `json:"unchanged"`
}

type storedBundle struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	PublishedAt string       `json:"published_at"`
	Files       []BundleFile `json:"files"`
}

func decodeFiles(files []BundleFile) (map[string][]byte, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("files is required: the bundle's files as [{path, content, encoding?}], skill.toml included")
	}
	out := make(map[string][]byte, len(files))
	for _, f := range files {
		if _, dup := out[f.Path]; dup {
			return nil, fmt.Errorf("file %q appears twice", f.Path)
		}
		switch f.Encoding {
		case "", "utf-8":
			out[f.Path] = []byte(f.Content)
		case "base64":
			b, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil {
				return nil, fmt.Errorf("file %q: content is not base64: %w", f.Path, err)
			}
			out[f.Path] = b
		default:
			return nil, fmt.Errorf(`file %q: encoding %q must be "utf-8" or "base64"`, f.Path, f.Encoding)
		}
	}
	return out, nil
}

// Publish validates a bundle with the same rules as bundle folders, stores
// it durably (state scope Options.BundleScope, key name@version) and puts
// it in the catalog. A version is immutable: publishing it again with
// other content is an error, with the same content a no-op.
func (r *Runtime) Publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	files, err := decodeFiles(req.Files)
	if err != nil {
		return PublishResult{}, err
	}
	e, err := BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: SourcePublishedBundles, Path: ManifestFile}, time.Now().UTC())
	if err != nil {
		return PublishResult{}, err
	}
	m := e.Extra.(*Manifest)
	res := PublishResult{Name: m.Name, Version: m.Version, Kind: m.Kind, Files: len(files)}
	key := m.Name + "@" + m.Version
	if old, ok := r.pub.Get(e.ID, e.Version); ok {
		if digestList(old.Files) == digestList(e.Files) {
			res.Unchanged = true
			return res, nil
		}
		return PublishResult{}, fmt.Errorf("%s %s is already published with other content: versions are immutable, publish a higher version", m.Name, m.Version)
	}
	stored := storedBundle{Name: m.Name, Version: m.Version, PublishedAt: e.Modified.Format(time.RFC3339Nano)}
	for _, f := range e.Files {
		b, _ := f.Content.Bytes()
		stored.Files = append(stored.Files, BundleFile{Path: f.Path, Content: base64.StdEncoding.EncodeToString(b), Encoding: "base64"})
	}
	if err := r.opts.State.Set(ctx, r.opts.BundleScope, key, stored); err != nil {
		return PublishResult{}, fmt.Errorf("store %s: %w", key, err)
	}
	if err := r.pub.Put(e); err != nil {
		return PublishResult{}, err
	}
	r.log.Info("skills protocol: bundle published", "name", m.Name, "version", m.Version, "files", len(files))
	return res, nil
}

// LoadPublished reads every bundle published over iii from the state
// scope into the catalog (at start and after a reconnect).
func (r *Runtime) LoadPublished(ctx context.Context) error {
	items, err := r.opts.State.List(ctx, r.opts.BundleScope)
	if err != nil {
		return fmt.Errorf("list published bundles: %w", err)
	}
	var entries []*catalog.Entry
	for _, raw := range items {
		var sb storedBundle
		if err := json.Unmarshal(raw, &sb); err != nil {
			r.log.Warn("skills protocol: stored bundle unreadable, skipped", "err", err)
			continue
		}
		files, err := decodeFiles(sb.Files)
		if err == nil {
			modified, _ := time.Parse(time.RFC3339Nano, sb.PublishedAt)
			var e *catalog.Entry
			if e, err = BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: SourcePublishedBundles, Path: ManifestFile}, modified); err == nil {
				entries = append(entries, e)
				continue
			}
		}
		r.log.Warn("skills protocol: stored bundle invalid, skipped", "name", sb.Name, "version", sb.Version, "err", err)
	}
	return r.pub.Replace(entries)
}

// Register binds the runtime to an iii client: the publish function, and
// reloading published bundles on every (re)connect.
func (r *Runtime) Register(client *iii.Client) error {
	_, err := client.RegisterFunction(PublishFunction, func(ctx context.Context, data json.RawMessage) (any, error) {
		var req PublishRequest
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&req); err != nil {
			return nil, iii.NewInvocationError("invalid_payload", fmt.Sprintf("%s: payload must be {\"files\":[{\"path\",\"content\",\"encoding\"?}]}: %v", PublishFunction, err))
		}
		res, err := r.Publish(ctx, req)
		if err != nil {
			return nil, iii.NewInvocationError("invalid_bundle", fmt.Sprintf("%s: %v", PublishFunction, err))
		}
		return res, nil
	}, iii.RegisterFunctionOptions{Description: "Publish a Skills Protocol bundle (skill.toml, SKILL.md, code/, resources/) to the Skills Protocol runtime; versions are immutable"})
	if err != nil {
		return err
	}
	client.OnConnect(func(ctx context.Context) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.LoadPublished(ctx); err != nil {
				r.log.Warn("skills protocol: published bundles not loaded", "err", err)
			}
		}()
	})
	return nil
}
