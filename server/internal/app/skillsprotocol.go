package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

// newSkillsProtocol builds the runtime over cat and its own store in
// dataDir (blobs and published bundles, out of every engine client's
// reach), registers its iii function on client and loads the published
// bundles and the bundle folders. observeRun, when set, is told of every
// sandbox run (metrics). Close the returned runtime and then the store.
func newSkillsProtocol(client *iii.Client, cat *catalog.Catalog, cfg SkillsProtocolConfig, in, dataDir string, log *slog.Logger,
	observeRun func(sandbox.Result)) (*skillsprotocol.Runtime, *store.Store, error) {
	rt, st, err := openSkillsProtocol(client, cat, cfg, in, dataDir, log, observeRun)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.LoadPublished(ctx); err != nil {
		log.Warn("skills protocol: published bundles not loaded", "err", err)
	}
	if len(cfg.Bundles) > 0 {
		if err := rt.LoadFolders(cfg.Bundles...); err != nil {
			log.Warn("skills protocol: bundle folders not loaded", "err", err)
		}
	}
	return rt, st, nil
}

func openSkillsProtocol(client *iii.Client, cat *catalog.Catalog, cfg SkillsProtocolConfig, in, dataDir string, log *slog.Logger,
	observeRun func(sandbox.Result)) (*skillsprotocol.Runtime, *store.Store, error) {
	if err := cfg.validate(in); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("skills protocol store: %w", err)
	}
	st, err := store.Open(filepath.Join(dataDir, skillsprotocol.StoreFile))
	if err != nil {
		return nil, nil, fmt.Errorf("skills protocol store (give each skills process its own --data): %w", err)
	}
	rt, err := skillsprotocol.New(skillsprotocol.Options{Catalog: cat, State: kv.Local(st),
		Secrets: cfg.Secrets, SecretGrants: cfg.SecretGrants, PublishedMayShadowFolders: cfg.PublishedMayShadowFolders,
		MaxPublishedBundles: cfg.PublishedMaxBundles, MaxPublishedBundleBytes: cfg.PublishedBundleMaxBytes, MaxPublishedBytes: cfg.PublishedMaxBytes,
		WorkDir: cfg.WorkDir, BlobTTL: cfg.BlobTTL, MaxBlobStoreBytes: cfg.BlobStoreMaxBytes,
		Sandbox:       sandbox.New(sandbox.Config{Cgroups: cfg.Cgroups, CgroupParent: cfg.CgroupParent, Observe: observeRun}),
		Limits:        sandbox.Limits{RunMemoryBytes: cfg.RunMemoryBytes, WorkspaceBytes: cfg.TmpfsBytes},
		MaxInputBlobs: cfg.MaxInputBlobs, MaxInputBlobBytes: cfg.MaxInputBlobBytes, MaxBlobLoadBytes: cfg.MaxBlobLoadBytes,
		MaxBatchRequests: cfg.MaxBatchRequests, MaxBatchResponseBytes: cfg.MaxBatchResponseBytes, Logger: log})
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	if err := rt.Register(client); err != nil {
		_ = rt.Close()
		_ = st.Close()
		return nil, nil, err
	}
	return rt, st, nil
}
