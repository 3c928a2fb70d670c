package skillsprotocol

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/kv"
)

// Published bundles across registry instances. Each instance keeps the
// bundles it serves in its own store (out of every engine client's reach:
// localstate.go). Instances on engines that share state (the real engine's
// redis adapters) must all serve what was published through any of them,
// and no instance can call another's functions, so a publish also writes
// a shared copy into engine state and announces its key; every other
// instance then copies the bundle from there into its own store, running
// every check of a publish again (bundle rules, grants, caps, folders).
// The shared copy is only a transport: a version an instance already
// holds is never replaced from it (versions are immutable), and what an
// instance serves is always its own checked copy, so rewriting the shared
// copy through state::* cannot change a bundle anyone serves.
const (
	// SharedBundleScope is the engine state scope of the shared copies'
	// records (key name@version); their files are in SharedBundleScope +
	// "-files" (key name@version#i, base64), as in the local store.
	SharedBundleScope = "skills-protocol-shared-bundles"
)

// sharedBundles is where a publish is shared; the zero value shares
// nothing (one instance alone: the embedded engine of --standalone).
type sharedBundles struct {
	state  kv.Store
	notify func(ctx context.Context, key string)
}

func (s sharedBundles) enabled() bool { return s.state != nil }

// announce tells the other instances that bundle key was published here.
func (s sharedBundles) announce(ctx context.Context, key string) {
	if s.notify != nil {
		s.notify(ctx, key)
	}
}

// write stores the shared copy of bundle key: files first, record last,
// so an instance that reads the record finds every file.
func (s sharedBundles) write(ctx context.Context, r *Runtime, key string, rec bundleRecord, list []catalog.File, files map[string][]byte) error {
	if !s.enabled() {
		return nil
	}
	if err := r.storeFiles(ctx, s.state, SharedBundleScope+"-files", key, list, files); err != nil {
		return err
	}
	return kv.Put(ctx, s.state, SharedBundleScope, key, rec)
}

// ShareBundles makes this runtime one of several registry instances on
// engines that share state: shared is engine state (kv.III), and
// announce tells the other instances that bundle key was published
// (the registry's cluster.Cluster.Announce). Call it before LoadPublished
// and before the first publish.
func (r *Runtime) ShareBundles(shared kv.Store, announce func(ctx context.Context, key string)) {
	r.shared = sharedBundles{state: shared, notify: announce}
}

// ClusterScope is the shared bundles as a scope of package cluster: the
// registry's cluster calls Apply for each bundle key another instance
// announced and Relist when changes were missed (at connect, and when the
// reconcile finds a gap). Register it under SharedBundleScope.
func (r *Runtime) ClusterScope() cluster.Scope { return sharedScope{r} }

type sharedScope struct{ r *Runtime }

// Apply refuses what cannot be a bundle key (name@version) before any read.
func (s sharedScope) Apply(ctx context.Context, key string) error {
	name, version, ok := strings.Cut(key, "@")
	if !ok || version == "" || len(version) > 128 || !ValidBundleName(name) {
		return cluster.ErrNotAKey
	}
	return s.r.ApplySharedBundle(ctx, key)
}

func (s sharedScope) Relist(ctx context.Context) error { return s.r.RelistSharedBundles(ctx) }

// ApplySharedBundle copies bundle key (name@version) from the shared copy
// into this instance, as a publish made here would store it; another
// instance announced it. A version already held is left as it is.
func (r *Runtime) ApplySharedBundle(ctx context.Context, key string) error {
	if !r.shared.enabled() {
		return nil
	}
	raw, ok, err := r.shared.state.Get(ctx, SharedBundleScope, key)
	if err != nil {
		return fmt.Errorf("read the shared bundle %s: %w", key, err)
	}
	if !ok {
		return nil // announced, then gone from state (state reset): nothing to copy
	}
	return r.copyShared(ctx, raw)
}

// RelistSharedBundles copies every shared bundle this instance does not
// hold: at connect and when the registry found changes it missed.
func (r *Runtime) RelistSharedBundles(ctx context.Context) error {
	if !r.shared.enabled() {
		return nil
	}
	items, err := r.shared.state.List(ctx, SharedBundleScope)
	if err != nil {
		return fmt.Errorf("list the shared bundles: %w", err)
	}
	for _, raw := range items {
		if err := r.copyShared(ctx, raw); err != nil {
			r.log.Warn("skills protocol: a bundle published through another registry instance is not served here", "err", err)
		}
	}
	return nil
}

// copyShared stores the shared bundle whose record is raw, unless a
// version of that key is held already.
func (r *Runtime) copyShared(ctx context.Context, raw json.RawMessage) error {
	var rec bundleRecord
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Name == "" || rec.Version == "" || len(rec.Files) == 0 {
		return fmt.Errorf("shared bundle record %s: want {name, version, published_at, bytes, files}", truncate(string(raw), 200))
	}
	key := rec.Name + "@" + rec.Version
	r.pubs.mu.Lock()
	defer r.pubs.mu.Unlock()
	if held, ok := r.pubs.records[key]; ok {
		if !slices.Equal(held.Files, rec.Files) {
			r.log.Warn("skills protocol: the shared copy of a published bundle differs from the one served here; this instance keeps its own (versions are immutable)", "bundle", key)
		}
		return nil
	}
	files := make(map[string][]byte, len(rec.Files))
	for i, f := range rec.Files {
		b, err := readBundleFile(ctx, r.shared.state, SharedBundleScope+"-files", rec, i)
		if err != nil {
			return fmt.Errorf("shared bundle %s: %w", key, err)
		}
		files[f.Path] = b
	}
	at, err := time.Parse(time.RFC3339Nano, rec.PublishedAt)
	if err != nil {
		at = time.Now().UTC()
	}
	if _, err := r.publishLocked(ctx, files, at, key); err != nil {
		return fmt.Errorf("shared bundle %s: %w", key, err)
	}
	return nil
}
