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
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/health"
	skillsmcp "github.com/iii-skills/skills/server/mcp"
	"github.com/iii-skills/skills/server/sandbox"
	"github.com/iii-skills/skills/server/skillsprotocol"
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
type spConfig struct {
	SkillsProtocol struct {
		Secrets           map[string]string `yaml:"secrets"`
		WorkDir           string            `yaml:"work_dir"`
		BlobTTL           string            `yaml:"blob_ttl"`
		BlobStoreMaxBytes int64             `yaml:"blob_store_max_bytes"`
		RunMemoryBytes    int64             `yaml:"run_memory_bytes"`
		Cgroups           string            `yaml:"cgroups"`
		CgroupParent      string            `yaml:"cgroup_parent"`
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

// newSkillsProtocol builds the runtime over cat, registers its iii
// function on client and loads the bundle folders (comma-separated).
func newSkillsProtocol(client *iii.Client, cat *catalog.Catalog, folders, configPath string, stateTimeout time.Duration, log *slog.Logger) (*skillsprotocol.Runtime, error) {
	cfg := loadSPConfig(configPath, log).SkillsProtocol
	var blobTTL time.Duration
	if cfg.BlobTTL != "" {
		d, err := time.ParseDuration(cfg.BlobTTL)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("skills_protocol.blob_ttl %q in %s: expected a positive duration such as 24h or 90m", cfg.BlobTTL, configPath)
		}
		blobTTL = d
	}
	if cfg.BlobStoreMaxBytes < 0 {
		return nil, fmt.Errorf("skills_protocol.blob_store_max_bytes %d in %s: expected a positive number of bytes", cfg.BlobStoreMaxBytes, configPath)
	}
	if cfg.RunMemoryBytes < 0 {
		return nil, fmt.Errorf("skills_protocol.run_memory_bytes %d in %s: expected a positive number of bytes", cfg.RunMemoryBytes, configPath)
	}
	if cfg.Cgroups != "" && cfg.Cgroups != "auto" && cfg.Cgroups != "off" {
		return nil, fmt.Errorf("skills_protocol.cgroups %q in %s: expected auto or off", cfg.Cgroups, configPath)
	}
	rt, err := skillsprotocol.New(skillsprotocol.Options{Catalog: cat, State: skillsprotocol.IIIState(client, stateTimeout),
		Secrets: cfg.Secrets, WorkDir: cfg.WorkDir, BlobTTL: blobTTL, MaxBlobStoreBytes: cfg.BlobStoreMaxBytes,
		Sandbox: sandbox.New(sandbox.Config{Cgroups: cfg.Cgroups, CgroupParent: cfg.CgroupParent}),
		Limits:  sandbox.Limits{RunMemoryBytes: cfg.RunMemoryBytes}, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := rt.Register(client); err != nil {
		_ = rt.Close()
		return nil, err
	}
	if folders != "" {
		if err := rt.LoadFolders(strings.Split(folders, ",")...); err != nil {
			log.Warn("skills protocol: bundle folders not loaded", "err", err)
		}
	}
	return rt, nil
}

func sandboxState(rt *skillsprotocol.Runtime) string {
	if err := rt.Sandbox().Available(); err != nil {
		return err.Error()
	}
	mode, _ := rt.Sandbox().CgroupMode()
	return "bubblewrap (" + string(mode) + ")"
}

// serveHTTP serves /mcp, the probes /healthz and /readyz (ready: nil is
// always ready) and, when rt is set and rpcPath is not empty, the Skills
// Protocol at rpcPath, until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, srv *skillsmcp.Server, opts skillsmcp.HTTPOptions, rt *skillsprotocol.Runtime, rpcPath string, ready health.Check) error {
	mux := http.NewServeMux()
	// Probes answer outside the door rules (see package health).
	health.Mount(mux, ready)
	opts.ListenAddr = ln.Addr().String()
	mux.Handle(skillsmcp.Path, srv.HTTPHandler(opts))
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
