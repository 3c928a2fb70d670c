package skillsprotocol

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/scope"
)

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

// bundleRecord is a published bundle's index record in the store (scope
// Options.BundleScope, key name@version): everything but the contents,
// which live one per key in the files scope (key name@version#i, i the
// file's position in Files) and are read on demand, checked against
// their sha256 on every read.
type bundleRecord struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	PublishedAt string       `json:"published_at"`
	Bytes       int64        `json:"bytes"`
	Files       []recordFile `json:"files"`
	// Publisher is who published it (publisherOf): the identity whose
	// share it counts against and who may unpublish it. Empty for
	// bundles published before publishers were recorded, through another
	// registry instance, or on an engine that names no caller.
	Publisher string `json:"publisher,omitempty"`
}

type recordFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// published is the runtime's view of the published bundles: every stored
// record (manifests resident, contents in the store) and the totals the
// caps check. mu serializes publishes.
type published struct {
	mu      sync.Mutex
	records map[string]bundleRecord // key name@version
	bytes   int64
	// usage is each publisher's count and bytes (its share).
	usage map[string]publisherUsage
}

type publisherUsage struct {
	bundles int
	bytes   int64
}

// count adds (or, with sign -1, removes) rec to the totals.
func (p *published) count(rec bundleRecord, sign int) {
	p.bytes += int64(sign) * rec.Bytes
	u := p.usage[rec.Publisher]
	u.bundles += sign
	u.bytes += int64(sign) * rec.Bytes
	if u.bundles <= 0 {
		delete(p.usage, rec.Publisher)
		return
	}
	p.usage[rec.Publisher] = u
}

// publisherOf names the caller of a publish or unpublish: its scoped
// token ("token:acme", every connection of it), else its connection
// ("connection:<worker id>"); "" when the engine names no caller.
func (r *Runtime) publisherOf(ctx context.Context) string {
	c, ok := r.stamped.Caller(ctx)
	switch {
	case !ok:
		return ""
	case c.Scoped():
		return "token:" + c.Token
	case c.WorkerID != "":
		return "connection:" + c.WorkerID
	}
	return ""
}

// describePublisher renders a publisherOf value for messages.
func describePublisher(p string) string {
	if t, ok := strings.CutPrefix(p, "token:"); ok {
		return fmt.Sprintf("publisher token %q", t)
	}
	if c, ok := strings.CutPrefix(p, "connection:"); ok {
		return "publisher connection " + c
	}
	return "publishers the engine does not name"
}

type publisherKey struct{}

func (r *Runtime) bundleFilesScope() string { return r.opts.BundleScope + "-files" }

func fileKey(bundleKey string, i int) string { return bundleKey + "#" + strconv.Itoa(i) }

func decodeFiles(files []BundleFile) (map[string][]byte, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("files is required: the bundle's files as [{path, content, encoding?}], skill.toml included")
	}
	if len(files) > MaxBundleFiles {
		return nil, fmt.Errorf("bundle has %d files (at most %d)", len(files), MaxBundleFiles)
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

// folderHolder is the entry an operator serves from a folder at id
// (a bundle folder or a skills folder, not what a download wrote there),
// if any.
func (r *Runtime) folderHolder(id string) (*catalog.Entry, bool) {
	for _, e := range r.cat.Holders(id) {
		if operatorFolderEntry(e) {
			return e, true
		}
	}
	return nil, false
}

// operatorFolderEntry reports whether e is served from a folder the
// operator configured (not published over iii, not written by a download).
func operatorFolderEntry(e *catalog.Entry) bool {
	switch {
	case e.Origin.Downloaded:
		return false
	case e.Origin.Kind == catalog.OriginFolder,
		e.Origin.Kind == catalog.OriginBundle && e.Origin.Source != SourcePublishedBundles:
		return true
	}
	return false
}

// Publish validates a bundle with the same rules as bundle folders and
// the operator's rules for published bundles (secret grants, names served
// from folders, count and byte caps), stores it durably in the server's
// store and puts it in the catalog. A version is immutable: publishing it
// again with other content is an error, with the same content a no-op.
// When bundles are shared with other registry instances (ShareBundles),
// it is written to the shared copy first and announced after.
func (r *Runtime) Publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	// One publish at a time, decoding included: each holds a few copies
	// of its bundle (up to 16 MiB) while it runs, so concurrent publishers
	// cannot stack them up.
	ctx = context.WithValue(ctx, publisherKey{}, r.publisherOf(ctx))
	r.pubs.mu.Lock()
	files, err := decodeFiles(req.Files)
	var res PublishResult
	if err == nil {
		res, err = r.publishLocked(ctx, files, time.Now().UTC(), "")
	}
	r.pubs.mu.Unlock()
	if err == nil && !res.Unchanged {
		r.shared.announce(ctx, res.Name+"@"+res.Version)
	}
	return res, err
}

// publishLocked is Publish once the files are decoded, with r.pubs.mu
// held. With sharedKey "" the bundle comes from a caller of this instance
// (its token's namespaces apply, and the shared copy is written);
// otherwise it is another registry instance's shared copy stored under
// sharedKey (name@version), whose files must name that version: checked
// there for the caller, and here again for everything else.
func (r *Runtime) publishLocked(ctx context.Context, files map[string][]byte, at time.Time, sharedKey string) (PublishResult, error) {
	byCaller := sharedKey == ""
	var size int64
	for _, b := range files {
		size += int64(len(b))
	}
	if size > r.opts.MaxPublishedBundleBytes {
		return PublishResult{}, fmt.Errorf("bundle holds %d bytes; a published bundle holds at most %d (skills_protocol.published_bundle_max_bytes)", size, r.opts.MaxPublishedBundleBytes)
	}
	e, err := BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: SourcePublishedBundles, Path: ManifestFile}, at)
	if err != nil {
		return PublishResult{}, err
	}
	m := e.Extra.(*Manifest)
	// Before anything else answers (even "unchanged"), so a scoped token
	// learns nothing about other teams' bundles.
	if byCaller {
		if err := r.publisherMayName(ctx, m.Name, e.ID); err != nil {
			return PublishResult{}, err
		}
	}
	res := PublishResult{Name: m.Name, Version: m.Version, Kind: m.Kind, Files: len(files)}
	key := m.Name + "@" + m.Version
	if !byCaller && key != sharedKey {
		return PublishResult{}, fmt.Errorf("its skill.toml names %s", key)
	}
	if old, ok := r.pubs.records[key]; ok {
		if sameFiles(old, e.Files) {
			res.Unchanged = true
			return res, nil
		}
		return PublishResult{}, fmt.Errorf("%s %s is already published with other content: versions are immutable, publish a higher version", m.Name, m.Version)
	}
	if !r.opts.PublishedMayShadowFolders {
		if f, ok := r.folderHolder(e.ID); ok {
			// The folder's path is for the operator's log, not the publisher.
			r.log.Warn("skills protocol: publish refused: the name is served from a folder", "name", m.Name, "version", m.Version,
				"folder", f.Origin.Source, "path", f.Origin.Path)
			return PublishResult{}, fmt.Errorf("%s is served from the operator's folder (version %s there): a published bundle may not take a name served from a folder (the operator allows it with skills_protocol.published_may_shadow_folders: true)",
				m.Name, displayVersion(f.Version))
		}
	}
	if missing := r.Ungranted(m, OriginPublished); len(missing) > 0 {
		return PublishResult{}, missingGrantError(m, missing)
	}
	publisher, _ := ctx.Value(publisherKey{}).(string)
	if byCaller && publisher != "" {
		// The publisher's share first: one publisher cannot take the
		// caps from everyone else. A publisher the engine does not name
		// cannot be told from the others: the global caps alone apply.
		u := r.pubs.usage[publisher]
		if u.bundles >= r.opts.MaxPublishedBundlesPerPublisher {
			return PublishResult{}, fmt.Errorf("%s has %d bundle versions published, its share of the %d this server keeps (skills_protocol.published_max_bundles; a publisher may hold %d): unpublish some with %s",
				describePublisher(publisher), u.bundles, r.opts.MaxPublishedBundles, r.opts.MaxPublishedBundlesPerPublisher, rules.FnUnpublishBundle)
		}
		if u.bytes+size > r.opts.MaxPublishedBytesPerPublisher {
			return PublishResult{}, fmt.Errorf("bundle holds %d bytes and the bundles of %s already hold %d; a publisher's bundles may hold at most %d together (its share of skills_protocol.published_max_bytes): unpublish some with %s",
				size, describePublisher(publisher), u.bytes, r.opts.MaxPublishedBytesPerPublisher, rules.FnUnpublishBundle)
		}
	}
	if n := len(r.pubs.records); n >= r.opts.MaxPublishedBundles {
		return PublishResult{}, fmt.Errorf("%d bundle versions are published, the most this server keeps (skills_protocol.published_max_bundles)", n)
	}
	if r.pubs.bytes+size > r.opts.MaxPublishedBytes {
		return PublishResult{}, fmt.Errorf("bundle holds %d bytes and published bundles already hold %d; together they may hold at most %d (skills_protocol.published_max_bytes)",
			size, r.pubs.bytes, r.opts.MaxPublishedBytes)
	}

	rec := bundleRecord{Name: m.Name, Version: m.Version, PublishedAt: e.Modified.Format(time.RFC3339Nano), Bytes: size, Publisher: publisher}
	for _, f := range e.Files {
		rec.Files = append(rec.Files, recordFile{Path: f.Path, Size: f.Size, SHA256: f.Digest.String()})
	}
	if byCaller {
		// The shared copy first: a publish the other instances cannot
		// see fails, rather than serving here only.
		if err := r.shared.write(ctx, r, key, rec, e.Files, files); err != nil {
			return PublishResult{}, fmt.Errorf("share %s with the other registry instances: %w", key, err)
		}
	}
	// Contents first, the record last: a crash in between leaves no
	// record, so the version is not published (and may be published again).
	if err := r.storeFiles(ctx, r.opts.State, r.bundleFilesScope(), key, e.Files, files); err != nil {
		r.dropFiles(ctx, key, len(e.Files)-1)
		return PublishResult{}, fmt.Errorf("store %s: %w", key, err)
	}
	if err := kv.Put(ctx, r.opts.State, r.opts.BundleScope, key, rec); err != nil {
		r.dropFiles(ctx, key, len(e.Files)-1)
		return PublishResult{}, fmt.Errorf("store %s: %w", key, err)
	}
	entry, err := r.publishedEntry(rec, files[ManifestFile], files[InstructionsFile])
	if err == nil {
		err = r.pub.Put(entry)
	}
	if err != nil {
		// Not served, so not kept: the store holds what the catalog does.
		_, _ = kv.Delete(ctx, r.opts.State, r.opts.BundleScope, key)
		r.dropFiles(ctx, key, len(e.Files)-1)
		return PublishResult{}, err
	}
	r.pubs.records[key] = rec
	r.pubs.count(rec, 1)
	if byCaller {
		r.log.Info("skills protocol: bundle published", "name", m.Name, "version", m.Version, "files", len(files), "bytes", size)
	} else {
		r.log.Info("skills protocol: bundle published through another registry instance", "name", m.Name, "version", m.Version, "files", len(files), "bytes", size)
	}
	return res, nil
}

// publisherMayName refuses a bundle name outside the namespaces of the
// caller's scoped token: its iii id (acme.crm.sync → acme/crm/sync) must
// be "<ns>" or "<ns>/…", the rule of the registry's skills. Callers
// without a scoped token, and every caller on an engine known not to
// stamp callers (where scoped tokens do not exist), may publish any name.
func (r *Runtime) publisherMayName(ctx context.Context, name, id string) error {
	c, ok := r.stamped.Caller(ctx)
	if !ok || c.Covers(scope.KindBundle, id) {
		return nil
	}
	r.log.Warn("skills protocol: publish refused: the bundle name is outside the namespaces of the caller's token",
		"name", name, "token", c.Token, "namespaces", c.Namespaces, "worker_id", c.WorkerID)
	return c.OutOfScopeError(fmt.Sprintf("bundle %s (iii id %s) is outside the namespaces of token %q (%s): a scoped token publishes only bundles named <namespace> or <namespace>.…",
		name, id, c.Token, strings.Join(c.Namespaces, ", ")))
}

func displayVersion(v string) string {
	if v == "" {
		return UnversionedVersion
	}
	return v
}

// sameFiles reports whether a stored record holds exactly files.
func sameFiles(rec bundleRecord, files []catalog.File) bool {
	if len(rec.Files) != len(files) {
		return false
	}
	for i, f := range files {
		if rec.Files[i].Path != f.Path || rec.Files[i].SHA256 != f.Digest.String() {
			return false
		}
	}
	return true
}

// storeFiles writes a bundle's contents into st's filesScope, several at once: the store
// commits concurrent writes together (one fsync for many files instead
// of one per file).
func (r *Runtime) storeFiles(ctx context.Context, st kv.Store, filesScope, key string, list []catalog.File, files map[string][]byte) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, 32)
	for i, f := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := kv.Put(ctx, st, filesScope, fileKey(key, i), base64.StdEncoding.EncodeToString(files[f.Path]))
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", f.Path, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// dropFiles removes the contents stored for key up to file last (a
// publish that failed part-way).
func (r *Runtime) dropFiles(ctx context.Context, key string, last int) {
	for i := 0; i <= last; i++ {
		_, _ = kv.Delete(ctx, r.opts.State, r.bundleFilesScope(), fileKey(key, i))
	}
}

// readStoredFile reads file i of a published bundle from the store and
// checks it against the sha256 recorded at publish: content changed in
// the store is refused, never served or run.
func (r *Runtime) readStoredFile(ctx context.Context, rec bundleRecord, i int) ([]byte, error) {
	b, err := readBundleFile(ctx, r.opts.State, r.bundleFilesScope(), rec, i)
	key, path := rec.Name+"@"+rec.Version, rec.Files[i].Path
	switch {
	case errors.Is(err, errFileMissing):
		r.log.Error("skills protocol: published bundle file missing or unreadable in the store; refused", "bundle", key, "path", path)
		return nil, fmt.Errorf("%s of published bundle %s is missing or unreadable in the store", path, key)
	case errors.Is(err, errFileChanged):
		r.log.Error("skills protocol: published bundle file does not match the digest recorded at publish (changed in the store); refused", "bundle", key, "path", path, "err", err)
		return nil, fmt.Errorf("%s of published bundle %s was changed in the store after it was published: refused", path, key)
	}
	return b, err
}

var (
	errFileMissing = errors.New("missing or unreadable")
	errFileChanged = errors.New("does not match the sha256 recorded at publish")
)

// readBundleFile reads file i of rec from st (scope filesScope, stored by
// storeFiles) and checks its sha256 against rec's. The error wraps
// errFileMissing or errFileChanged for those verdicts.
func readBundleFile(ctx context.Context, st kv.Store, filesScope string, rec bundleRecord, i int) ([]byte, error) {
	key := rec.Name + "@" + rec.Version
	f := rec.Files[i]
	raw, ok, err := st.Get(ctx, filesScope, fileKey(key, i))
	if err != nil {
		return nil, fmt.Errorf("read %s of published bundle %s: %w", f.Path, key, err)
	}
	var text string
	if !ok || json.Unmarshal(raw, &text) != nil {
		return nil, fmt.Errorf("%s of %s: %w", f.Path, key, errFileMissing)
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("%s of %s: not base64 (%v): %w", f.Path, key, err, errFileChanged)
	}
	if got := catalog.DigestOf(b).String(); got != f.SHA256 {
		return nil, fmt.Errorf("%s of %s: sha256 %s, recorded %s: %w", f.Path, key, got, f.SHA256, errFileChanged)
	}
	return b, nil
}

// publishedEntry is the catalog entry of a stored bundle: manifest,
// frontmatter and summary resident, every file's content (and the
// instructions) read from the store on demand. manifest and md are the
// contents of skill.toml and SKILL.md (md nil when there is none).
func (r *Runtime) publishedEntry(rec bundleRecord, manifest, md []byte) (*catalog.Entry, error) {
	modified, _ := time.Parse(time.RFC3339Nano, rec.PublishedAt)
	files := make([]catalog.File, len(rec.Files))
	mdIndex := -1
	for i, f := range rec.Files {
		d, err := catalog.ParseDigest(f.SHA256)
		if err != nil {
			return nil, fmt.Errorf("published bundle %s@%s: file %s: %w", rec.Name, rec.Version, f.Path, err)
		}
		i := i
		files[i] = catalog.File{Path: f.Path, Size: f.Size, Digest: d, MIME: catalog.MIMEType(f.Path), Modified: modified,
			Content: catalog.Lazy(f.Size, func() ([]byte, error) { return r.readStoredFile(context.Background(), rec, i) })}
		if f.Path == InstructionsFile {
			mdIndex = i
		}
	}
	e, err := buildEntry(files, manifest, md, mdIndex >= 0, catalog.Origin{Kind: catalog.OriginBundle, Source: SourcePublishedBundles, Path: ManifestFile}, modified)
	if err != nil {
		return nil, err
	}
	if IDToName(e.ID) != rec.Name || e.Version != rec.Version {
		return nil, fmt.Errorf("published bundle %s@%s: its skill.toml names %s@%s", rec.Name, rec.Version, IDToName(e.ID), e.Version)
	}
	if mdIndex >= 0 {
		// The instructions are read again on demand, frontmatter cut.
		body, _ := e.Body.String()
		hasFM := e.Frontmatter.Present
		e.Body = catalog.Lazy(int64(len(body)), func() ([]byte, error) {
			b, err := r.readStoredFile(context.Background(), rec, mdIndex)
			if err != nil || !hasFM {
				return b, err
			}
			_, rest, _ := catalog.SplitFrontmatter(string(b))
			return []byte(rest), nil
		})
	}
	return e, nil
}

// LoadPublished reads every bundle published over iii from the store into
// the catalog (at start): only skill.toml and SKILL.md of each are read
// (and checked against their digests); other files stay in the store
// until read. A record whose files no longer match their digests is
// refused with a log line.
func (r *Runtime) LoadPublished(ctx context.Context) error {
	items, err := r.opts.State.List(ctx, r.opts.BundleScope)
	if err != nil {
		return fmt.Errorf("list published bundles: %w", err)
	}
	records := map[string]bundleRecord{}
	var entries []*catalog.Entry
	for _, raw := range items {
		var rec bundleRecord
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Name == "" || len(rec.Files) == 0 {
			r.log.Error("skills protocol: stored bundle record unreadable; skipped", "record", truncate(string(raw), 200))
			continue
		}
		e, err := r.loadRecord(ctx, rec)
		if err != nil {
			r.log.Error("skills protocol: published bundle refused", "name", rec.Name, "version", rec.Version, "err", err)
			continue
		}
		// Grants may have changed since the publish: it runs without
		// what is no longer granted.
		r.ReportUngranted(e)
		records[rec.Name+"@"+rec.Version] = rec
		entries = append(entries, e)
	}
	r.pubs.mu.Lock()
	defer r.pubs.mu.Unlock()
	r.pubs.records, r.pubs.bytes, r.pubs.usage = records, 0, map[string]publisherUsage{}
	for _, rec := range records {
		r.pubs.count(rec, 1)
	}
	return r.pub.Replace(entries)
}

func (r *Runtime) loadRecord(ctx context.Context, rec bundleRecord) (*catalog.Entry, error) {
	var manifest, md []byte
	for i, f := range rec.Files {
		if f.Path != ManifestFile && f.Path != InstructionsFile {
			continue
		}
		b, err := r.readStoredFile(ctx, rec, i)
		if err != nil {
			return nil, err
		}
		if f.Path == ManifestFile {
			manifest = b
		} else {
			md = b
		}
	}
	if manifest == nil {
		return nil, fmt.Errorf("the stored record has no skill.toml")
	}
	return r.publishedEntry(rec, manifest, md)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// PublishedStats is how many bundle versions are published and their bytes.
func (r *Runtime) PublishedStats() (bundles int, bytes int64) {
	r.pubs.mu.Lock()
	defer r.pubs.mu.Unlock()
	return len(r.pubs.records), r.pubs.bytes
}

// Register binds the runtime to an iii client: the publish function.
// Published bundles live in the server's store (Options.State), loaded
// once by LoadPublished, so nothing needs reloading on a reconnect.
func (r *Runtime) Register(client *iii.Client) error {
	_, err := client.RegisterFunction(rules.FnPublishBundle, func(ctx context.Context, data json.RawMessage) (any, error) {
		var req PublishRequest
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&req); err != nil {
			return nil, iii.NewInvocationError("invalid_payload", fmt.Sprintf("%s: payload must be {\"files\":[{\"path\",\"content\",\"encoding\"?}]}: %v", rules.FnPublishBundle, err))
		}
		res, err := r.Publish(ctx, req)
		var refusal *iii.InvocationError
		if errors.As(err, &refusal) && (refusal.Code == rules.CodeForbidden || refusal.Code == rules.CodeOutOfScope) {
			return nil, err
		}
		if err != nil {
			return nil, iii.NewInvocationError("invalid_bundle", fmt.Sprintf("%s: %v", rules.FnPublishBundle, err))
		}
		return res, nil
	}, iii.RegisterFunctionOptions{Description: "Publish a Skills Protocol bundle (skill.toml, SKILL.md, code/, resources/) to the Skills Protocol runtime; versions are immutable"})
	if err != nil {
		return err
	}
	if _, err := client.RegisterFunction(rules.FnUnpublishBundle, r.unpublishHandler, iii.RegisterFunctionOptions{
		Description: "Remove versions of a Skills Protocol bundle published over iii: {name, version?, admin_token?}; only their publisher (connection or scoped token) or the registry's admin token may"}); err != nil {
		return err
	}
	var once sync.Once
	client.OnConnect(func(context.Context) {
		once.Do(func() { go r.warnLegacyBundles(client) })
	})
	return nil
}

// warnLegacyBundles says once when engine state still holds bundles
// published by an earlier version (which kept them there, where any
// engine client could rewrite them): they are not imported, since their
// content cannot be trusted; their publishers publish them again.
func (r *Runtime) warnLegacyBundles(client *iii.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	items, err := kv.III(client, 30*time.Second).List(ctx, DefaultBundleScope)
	if err != nil || len(items) == 0 {
		return
	}
	r.log.Warn("skills protocol: engine state holds bundles published by an earlier version of this server; they are not served (any engine client could have rewritten them there): publish them again",
		"scope", DefaultBundleScope, "bundles", len(items))
}
