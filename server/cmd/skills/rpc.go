package main

// The Skills Protocol surface of the binary: POST /rpc (--rpc-path) on the
// listener that serves /mcp, in standalone and worker mode, and
// `skills sp-tools --format schema|openai|anthropic`.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/health"
	"github.com/iii-skills/skills/server/httpguard"
	skillsmcp "github.com/iii-skills/skills/server/mcp"
	"github.com/iii-skills/skills/server/sandbox"
	"github.com/iii-skills/skills/server/skillsprotocol"
	"github.com/iii-skills/skills/server/store"
)

// spConfig is the skills_protocol section of config.yaml (every key optional):
//
//	skills_protocol:
//	  secrets: {SALESFORCE_API_KEY: "…"}   # values of secrets manifests may name (else the environment)
//	  work_dir: /var/tmp/skills-protocol    # run folders and materialized bundles
//	  blob_ttl: 24h                         # how long a blob is kept after it is created
//	  blob_store_max_bytes: 1073741824      # all blobs together; the oldest go first
//	  run_memory_bytes: 536870912           # memory of one run, all its processes (cgroup mode)
//	  cgroups: auto                         # auto (a cgroup per run when the host allows it) or off
//	  cgroup_parent: /skills.slice          # where run cgroups are created (default: see sandbox.Config)
//	  secret_grants:                        # which bundles receive which secrets (none by default)
//	    - {bundle: "acme.crm.*", origin: folder, names: [CRM_TOKEN]}
//	  published_may_shadow_folders: false   # may a published bundle take a name a folder serves
//	  published_max_bundles: 1000           # bundle versions published over iii
//	  published_bundle_max_bytes: 16777216  # one published bundle
//	  published_max_bytes: 1073741824       # all published bundles together
//	  tmpfs_bytes: 67108864                 # size of each tmpfs a run writes: /workspace, /tmp, /dev/shm
//	  max_input_blobs: 16                   # distinct blobs one run may name in input_blobs
//	  max_input_blob_bytes: 33554432        # their sizes together
//	  max_blob_load_bytes: 16777216         # blob contents read from the store at once
//	  max_batch_requests: 100               # requests in one JSON-RPC batch
//	  max_batch_response_bytes: 33554432    # a batch's answers together
type spConfig struct {
	SkillsProtocol struct {
		Secrets                   map[string]string            `yaml:"secrets"`
		SecretGrants              []skillsprotocol.SecretGrant `yaml:"secret_grants"`
		PublishedMayShadowFolders bool                         `yaml:"published_may_shadow_folders"`
		PublishedMaxBundles       int                          `yaml:"published_max_bundles"`
		PublishedBundleMaxBytes   int64                        `yaml:"published_bundle_max_bytes"`
		PublishedMaxBytes         int64                        `yaml:"published_max_bytes"`
		WorkDir                   string                       `yaml:"work_dir"`
		BlobTTL                   string                       `yaml:"blob_ttl"`
		BlobStoreMaxBytes         int64                        `yaml:"blob_store_max_bytes"`
		RunMemoryBytes            int64                        `yaml:"run_memory_bytes"`
		Cgroups                   string                       `yaml:"cgroups"`
		CgroupParent              string                       `yaml:"cgroup_parent"`
		TmpfsBytes                int64                        `yaml:"tmpfs_bytes"`
		MaxInputBlobs             int                          `yaml:"max_input_blobs"`
		MaxInputBlobBytes         int64                        `yaml:"max_input_blob_bytes"`
		MaxBlobLoadBytes          int64                        `yaml:"max_blob_load_bytes"`
		MaxBatchRequests          int                          `yaml:"max_batch_requests"`
		MaxBatchResponseBytes     int                          `yaml:"max_batch_response_bytes"`
	} `yaml:"skills_protocol"`
}

func loadSPConfig(path string, log *slog.Logger) spConfig {
	var c spConfig
	raw, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		log.Warn("skills protocol: skills_protocol section of the config ignored", "path", path, "err", err)
		return spConfig{}
	}
	return c
}

// newSkillsProtocol builds the runtime over cat and its own store in
// dataDir (blobs and published bundles, out of every engine client's
// reach), registers its iii function on client and loads the published
// bundles and the bundle folders (comma-separated). Close the returned
// runtime and then the store.
func newSkillsProtocol(client *iii.Client, cat *catalog.Catalog, folders, configPath, dataDir string, log *slog.Logger) (*skillsprotocol.Runtime, *store.Store, error) {
	rt, st, err := openSkillsProtocol(client, cat, configPath, dataDir, log)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.LoadPublished(ctx); err != nil {
		log.Warn("skills protocol: published bundles not loaded", "err", err)
	}
	if folders != "" {
		if err := rt.LoadFolders(strings.Split(folders, ",")...); err != nil {
			log.Warn("skills protocol: bundle folders not loaded", "err", err)
		}
	}
	return rt, st, nil
}

func openSkillsProtocol(client *iii.Client, cat *catalog.Catalog, configPath, dataDir string, log *slog.Logger) (*skillsprotocol.Runtime, *store.Store, error) {
	cfg := loadSPConfig(configPath, log).SkillsProtocol
	var blobTTL time.Duration
	if cfg.BlobTTL != "" {
		d, err := time.ParseDuration(cfg.BlobTTL)
		if err != nil || d <= 0 {
			return nil, nil, fmt.Errorf("skills_protocol.blob_ttl %q in %s: expected a positive duration such as 24h or 90m", cfg.BlobTTL, configPath)
		}
		blobTTL = d
	}
	if cfg.BlobStoreMaxBytes < 0 {
		return nil, nil, fmt.Errorf("skills_protocol.blob_store_max_bytes %d in %s: expected a positive number of bytes", cfg.BlobStoreMaxBytes, configPath)
	}
	if cfg.RunMemoryBytes < 0 {
		return nil, nil, fmt.Errorf("skills_protocol.run_memory_bytes %d in %s: expected a positive number of bytes", cfg.RunMemoryBytes, configPath)
	}
	for key, v := range map[string]int64{"tmpfs_bytes": cfg.TmpfsBytes, "max_input_blobs": int64(cfg.MaxInputBlobs),
		"max_input_blob_bytes": cfg.MaxInputBlobBytes, "max_blob_load_bytes": cfg.MaxBlobLoadBytes, "max_batch_requests": int64(cfg.MaxBatchRequests),
		"max_batch_response_bytes": int64(cfg.MaxBatchResponseBytes)} {
		if v < 0 {
			return nil, nil, fmt.Errorf("skills_protocol.%s %d in %s: expected a positive number", key, v, configPath)
		}
	}
	if cfg.Cgroups != "" && cfg.Cgroups != "auto" && cfg.Cgroups != "off" {
		return nil, nil, fmt.Errorf("skills_protocol.cgroups %q in %s: expected auto or off", cfg.Cgroups, configPath)
	}
	for i, g := range cfg.SecretGrants {
		if err := g.Validate(); err != nil {
			return nil, nil, fmt.Errorf("skills_protocol.secret_grants[%d] in %s: %w", i, configPath, err)
		}
	}
	if cfg.PublishedMaxBundles < 0 {
		return nil, nil, fmt.Errorf("skills_protocol.published_max_bundles %d in %s: expected a positive count", cfg.PublishedMaxBundles, configPath)
	}
	if b := cfg.PublishedBundleMaxBytes; b < 0 || b > skillsprotocol.MaxBundleBytes {
		return nil, nil, fmt.Errorf("skills_protocol.published_bundle_max_bytes %d in %s: expected a positive number of bytes, at most %d", b, configPath, skillsprotocol.MaxBundleBytes)
	}
	if cfg.PublishedMaxBytes < 0 {
		return nil, nil, fmt.Errorf("skills_protocol.published_max_bytes %d in %s: expected a positive number of bytes", cfg.PublishedMaxBytes, configPath)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("skills protocol store: %w", err)
	}
	st, err := store.Open(filepath.Join(dataDir, skillsprotocol.StoreFile))
	if err != nil {
		return nil, nil, fmt.Errorf("skills protocol store (give each skills process its own --data): %w", err)
	}
	rt, err := skillsprotocol.New(skillsprotocol.Options{Catalog: cat, State: skillsprotocol.LocalState(st),
		Secrets: cfg.Secrets, SecretGrants: cfg.SecretGrants, PublishedMayShadowFolders: cfg.PublishedMayShadowFolders,
		MaxPublishedBundles: cfg.PublishedMaxBundles, MaxPublishedBundleBytes: cfg.PublishedBundleMaxBytes, MaxPublishedBytes: cfg.PublishedMaxBytes,
		WorkDir: cfg.WorkDir, BlobTTL: blobTTL, MaxBlobStoreBytes: cfg.BlobStoreMaxBytes,
		Sandbox:       sandbox.New(sandbox.Config{Cgroups: cfg.Cgroups, CgroupParent: cfg.CgroupParent}),
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

func sandboxState(rt *skillsprotocol.Runtime) string {
	if err := rt.Sandbox().Available(); err != nil {
		return err.Error()
	}
	mode, _ := rt.Sandbox().CgroupMode()
	return "bubblewrap (" + string(mode) + ")"
}

// serveHTTP serves /mcp, the probes /healthz and /readyz (ready: nil is
// always ready), with page set the web page at /, and, when rt is set and
// rpcPath is not empty, the Skills Protocol at rpcPath, until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, srv *skillsmcp.Server, opts skillsmcp.HTTPOptions, rt *skillsprotocol.Runtime, rpcPath string,
	page func(httpguard.Policy) (http.Handler, func()), ready health.Check) error {
	mux := http.NewServeMux()
	// Probes answer outside the door rules (see package health).
	health.Mount(mux, ready)
	opts.ListenAddr = ln.Addr().String()
	mux.Handle(skillsmcp.Path, srv.HTTPHandler(opts))
	if page != nil {
		// The page applies the same Host, Origin and token rules itself
		// (its sign-in form must be reachable without the token).
		h, closePage := page(opts.Policy())
		// Closing ends the page's event streams, which would otherwise
		// hold the server's graceful shutdown until its deadline.
		stopPage := context.AfterFunc(ctx, closePage)
		defer func() {
			if stopPage() {
				closePage()
			}
		}()
		mux.Handle("/", h)
	}
	if rt != nil && rpcPath != "" {
		// The same door as /mcp: Origin, Host (against DNS rebinding; /rpc
		// runs code) and token.
		guard := opts.Policy()
		mux.Handle(rpcPath, guard.Wrap(rt))
		mux.Handle(strings.TrimSuffix(rpcPath, "/")+"/tools", guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defs, err := skillsprotocol.ToolDefinitions(r.URL.Query().Get("format"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(defs)
		})))
	}
	return skillsmcp.ServeHandler(ctx, ln, mux)
}

func runSPTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills sp-tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "schema", "Tool definition format: schema (the seed's JSON Schema form), openai or anthropic")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	defs, err := skillsprotocol.ToolDefinitions(*format)
	if err != nil {
		fmt.Fprintln(stderr, "skills sp-tools:", err)
		return 2
	}
	b, _ := json.MarshalIndent(defs, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return 0
}
