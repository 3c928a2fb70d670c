package app

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every key config files have today loads where it always did.
func TestLoadExistingKeys(t *testing.T) {
	t.Setenv("ACME_TOKEN_FOR_LOAD", "acme-token-0123456789")
	path := writeConfig(t, `scopes:
  skills: s
  prompts: p
state_timeout_ms: 500
skills_folder: [./a, ./b]
registry_url: https://registry.example
download_timeout_ms: 1000
registry_cache_ttl_ms: 0
download_hosts: [github.com]
mcp:
  allow_side_effects: true
versions:
  retain: 5
  max_bytes: 1000
  serve_label: stable
  protected_labels: [stable]
mcp_allow_host: skills.example.com, *.skills.test
engine_allow_host: [iii.example.com]
engine_tokens:
  - name: acme
    token_env: ACME_TOKEN_FOR_LOAD
    namespaces: [acme]
skills_protocol:
  cgroups: off
  blob_ttl: 2h
  secret_grants:
    - {bundle: acme.crm.*, origin: folder, names: [CRM_TOKEN]}
  secrets: {ANY_NAME: v}
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r, d := cfg.Registry, cfg.Directory
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"scopes", r.Scopes.Skills + "/" + r.Scopes.Prompts, "s/p"},
		{"state_timeout_ms", r.StateTimeoutMS, int64(500)},
		{"skills_folder", []string(d.SkillsFolder), []string{"./a", "./b"}},
		{"registry_url", d.RegistryURL, "https://registry.example"},
		{"download_timeout_ms", d.DownloadTimeoutMS, int64(1000)},
		{"registry_cache_ttl_ms", d.RegistryCacheTTLMS, int64(0)},
		{"download_hosts", d.DownloadHosts, []string{"github.com"}},
		{"mcp.allow_side_effects", r.MCP.AllowSideEffects, true},
		{"versions", r.Versions.Retain*1000 + len(r.Versions.ProtectedLabels), 5001},
		{"versions.serve_label", r.Versions.ServeLabel, "stable"},
		{"mcp_allow_host", []string(cfg.HTTP.AllowHost), []string{"skills.example.com", "*.skills.test"}},
		{"engine_allow_host", []string(cfg.Engine.AllowHost), []string{"iii.example.com"}},
		{"engine_tokens", cfg.Engine.Tokens[0].TokenEnv, "ACME_TOKEN_FOR_LOAD"},
		{"skills_protocol.cgroups", cfg.SkillsProtocol.Cgroups, "off"},
		{"skills_protocol.secrets", cfg.SkillsProtocol.Secrets["ANY_NAME"], "v"},
		{"skills_protocol.secret_grants", cfg.SkillsProtocol.SecretGrants[0].Bundle, "acme.crm.*"},
		// Not in the file: the defaults.
		{"http addr default", cfg.HTTP.Addr, DefaultHTTPAddr},
		{"claim timeout default", cfg.Registry.ClaimTimeout, DefaultClaimTimeout},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if cfg.Path != path {
		t.Errorf("Path %q, want %q", cfg.Path, path)
	}
}

// A misspelled key is named with its file:line and the key meant; every
// unknown key is listed at once, nested ones with their section.
func TestLoadNamesUnknownKeys(t *testing.T) {
	path := writeConfig(t, "skill_folder: ./skills\nscopes:\n  skils: x\nskills_protocol:\n  secret_grants:\n    - {bundle: a, origin: folder, names: [A], nmes: [B]}\ncompletely_unrelated: 1\n")
	_, err := Load(path)
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, want := range []string{
		path + ":1: unknown key skill_folder; did you mean skills_folder?",
		path + ":3: unknown key scopes.skils; did you mean scopes.skills?",
		path + ":6: unknown key skills_protocol.secret_grants[0].nmes; did you mean skills_protocol.secret_grants[0].names?",
		path + ":7: unknown key completely_unrelated\n",
	} {
		if !strings.Contains(err.Error()+"\n", want) {
			t.Errorf("error omits %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "completely_unrelated; did you mean") {
		t.Errorf("a far-off key got a suggestion: %v", err)
	}
}

// The iii engine's own config.yaml (met when skills starts in the engine's
// folder) is refused as such, not read as an empty skills config.
func TestLoadRefusesTheEnginesConfig(t *testing.T) {
	path := writeConfig(t, "workers:\n  - name: iii-state\n    config:\n      adapter:\n        name: kv\n")
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+":1: this looks like the iii engine's config (top-level workers:), not a skills config") ||
		!strings.Contains(err.Error(), "--config PATH") {
		t.Fatalf("engine config: %v", err)
	}
}

// A malformed file or a wrongly typed value is refused with its line; an
// empty file is the defaults; a missing one is ErrNoFile with the defaults.
func TestLoadRefusesMalformedFiles(t *testing.T) {
	for yaml, want := range map[string]string{
		"scopes: [unclosed\n  skills: x\n": "is not valid YAML: line",
		"state_timeout_ms: \"x\"\n":        "line 1: cannot unmarshal",
		"- a\n- b\n":                       ":1: a skills config is a mapping of keys",
		"engine_tokens: acme\n":            "expected a list of {name, token or token_env, namespaces}",
		"mcp_allow_host: {a: b}\n":         "line 1: expected a host name or a list of host names",
	} {
		if _, err := Load(writeConfig(t, yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error with %q", yaml, err, want)
		}
	}
	cfg, err := Load(writeConfig(t, ""))
	if err != nil || !reflect.DeepEqual(cfg.Registry, DefaultConfig().Registry) {
		t.Errorf("empty file: %+v, %v", cfg.Registry, err)
	}
	cfg, err = Load(filepath.Join(t.TempDir(), "none.yaml"))
	if !errors.Is(err, ErrNoFile) || cfg.Engine.URL != DefaultConfig().Engine.URL {
		t.Errorf("missing file: %v", err)
	}
}

// Validate names the bad setting and what it expected.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Registry.StateTimeoutMS = 0 }, "state_timeout_ms must be a positive number"},
		{func(c *Config) { c.LogLevel = "loud" }, `log level "loud": expected debug, info, warn or error`},
		{func(c *Config) { c.Engine.Standalone, c.Engine.URL = true, "http://x:1" }, "invalid --url for --standalone"},
		{func(c *Config) { c.HTTP.RPCPath = "rpc" }, `--rpc-path "rpc" must start with /`},
		{func(c *Config) { c.HTTP.AllowHost = HostList{"https://x.example"} }, "expected a host name such as skills.example.com"},
		{func(c *Config) { c.HTTP.PublicURL = "skills.example.com" }, `--public-url (config public_url) "skills.example.com": the scheme must be https`},
		{func(c *Config) { c.HTTP.PublicURL = "https://skills.example.com/app" }, "no path, query or fragment"},
		{func(c *Config) { c.SkillsProtocol.Cgroups = "maybe" }, `skills_protocol.cgroups "maybe"`},
		{func(c *Config) { c.PprofAddr = "0.0.0.0:6060" }, "want a loopback host"},
		{func(c *Config) { c.Engine.Tokens = TokenList{{Name: "a", Token: "short", Namespaces: []string{"a"}}} }, "at least 16 characters"},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A flag wins over its key; a flag not given keeps the key's value; the
// old flag names still work (--mcp-addr is --http-addr).
func TestFlagsOverTheFile(t *testing.T) {
	cfg, err := Load(writeConfig(t, "skills_folder: [./from-file]\nmcp_allow_host: a.example\nstate_timeout_ms: 700\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("skills", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	if err := fs.Parse([]string{"--skills-folder", "./x", "--skills-folder", "./y", "--mcp-addr", "127.0.0.1:1",
		"--claim-timeout", "3s", "--serve-label", "prod", "--sp-bundles", "b1,b2"}); err != nil {
		t.Fatal(err)
	}
	if got := []string(cfg.Directory.SkillsFolder); !reflect.DeepEqual(got, []string{"./x", "./y"}) {
		t.Errorf("skills folders %v: the flag replaces the key", got)
	}
	if cfg.HTTP.Addr != "127.0.0.1:1" || cfg.Registry.ClaimTimeout != 3*time.Second || cfg.Registry.Versions.ServeLabel != "prod" ||
		!reflect.DeepEqual([]string(cfg.SkillsProtocol.Bundles), []string{"b1", "b2"}) {
		t.Errorf("flags not applied: %+v", cfg)
	}
	if cfg.Registry.StateTimeoutMS != 700 || !reflect.DeepEqual([]string(cfg.HTTP.AllowHost), []string{"a.example"}) {
		t.Errorf("keys without a flag lost: %+v", cfg)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"skills-folder", "standalone", "url", "data"}
	for in, want := range map[string]string{"skill-folder": "skills-folder", "standalon": "standalone", "ulr": "url", "zzzzzz": ""} {
		if got := Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// The config.yaml at the root of the repo (what `make run` reads) loads.
func TestTheShippedConfigLoads(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The environment wins over the file; a flag wins over both.
func TestEnvironmentBetweenFileAndFlags(t *testing.T) {
	t.Setenv(EnvMCPToken, "from-env")
	t.Setenv(EnvLogLevel, "debug")
	cfg, err := Load(writeConfig(t, "mcp_token: from-file\nlog_level: warn\nengine_token: file-engine-token\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ApplyEnv()
	fs := flag.NewFlagSet("skills", flag.ContinueOnError)
	cfg.AddFlags(fs)
	if err := fs.Parse([]string{"--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Token != "from-env" || cfg.LogLevel != "error" || cfg.Engine.Token != "file-engine-token" {
		t.Errorf("token %q, log level %q, engine token %q; want from-env, error (the flag), file-engine-token",
			cfg.HTTP.Token, cfg.LogLevel, cfg.Engine.Token)
	}
}

// The iii-directory keys (app.DirectoryConfig) load at the top level with
// upstream's defaults; skills_folder is a path or a list; a bad value is
// refused naming the key.
func TestDirectoryKeys(t *testing.T) {
	cfg, err := Load(writeConfig(t, "skills_folder: ./skills\n"))
	if err != nil || !reflect.DeepEqual([]string(cfg.Directory.SkillsFolder), []string{"./skills"}) {
		t.Fatalf("one path: %v %v", cfg.Directory.SkillsFolder, err)
	}
	if d := cfg.Directory; d.RegistryURL != "https://api.workers.iii.dev" || d.DownloadTimeoutMS != 60000 || d.RegistryCacheTTLMS != 60000 || len(d.DownloadHosts) != 0 {
		t.Fatalf("iii-directory defaults: %+v", d)
	}
	cfg, err = Load(writeConfig(t, "skills_folder: [a, /b]\nregistry_cache_ttl_ms: 0\n"))
	if err != nil || !reflect.DeepEqual([]string(cfg.Directory.SkillsFolder), []string{"a", "/b"}) || cfg.Directory.RegistryCacheTTLMS != 0 {
		t.Fatalf("list: %+v %v", cfg.Directory, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a cache TTL of 0 turns the cache off: %v", err)
	}
	cfg, err = Load(writeConfig(t, "state_timeout_ms: 5\n"))
	if err != nil || len(cfg.Directory.SkillsFolder) != 0 {
		t.Fatalf("unset: %v %v", cfg.Directory.SkillsFolder, err)
	}
	if _, err := Load(writeConfig(t, "skills_folder: {a: 1}\n")); err == nil || !strings.Contains(err.Error(), "skills_folder (line 1): expected a path or a list of paths") {
		t.Errorf("skills_folder as a map: %v", err)
	}
	for yaml, want := range map[string]string{
		"download_timeout_ms: 0\n":          "download_timeout_ms must be a positive number of milliseconds, got 0",
		"registry_cache_ttl_ms: -1\n":       "registry_cache_ttl_ms must be 0 (no cache) or a positive number of milliseconds, got -1",
		"download_hosts: [https://x.dev]\n": `download_hosts: "https://x.dev" is not a host name`,
	} {
		cfg, err := Load(writeConfig(t, yaml))
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error with %q", yaml, err, want)
		}
	}
}

// Our own durations are Go duration strings decoded into time.Duration
// (a bare 0 too); a number without a unit, an empty string or a word is
// refused with its file:line and what to write instead. blob_ttl, parsed
// by hand before, reads the same strings it always took.
func TestDurationsHaveOneForm(t *testing.T) {
	cfg, err := Load(writeConfig(t, "claim_timeout: 90s\nresult_hold: 0\nresult_resend: 25ms\nmcp_idle_timeout: 1h30m\n"+
		"skills_protocol:\n  blob_ttl: 2h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Registry; r.ClaimTimeout != 90*time.Second || r.ResultHold != 0 || r.ResultResend != 25*time.Millisecond ||
		cfg.HTTP.IdleTimeout != 90*time.Minute || cfg.SkillsProtocol.BlobTTL != 2*time.Hour {
		t.Errorf("durations: %+v %v %v", r, cfg.HTTP.IdleTimeout, cfg.SkillsProtocol.BlobTTL)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	if def := DefaultConfig(); def.SkillsProtocol.BlobTTL != 24*time.Hour {
		t.Errorf("blob_ttl default %v, want 24h", def.SkillsProtocol.BlobTTL)
	}
	for yaml, want := range map[string]string{
		"claim_timeout: 30\n":                  `:1: claim_timeout 30: a duration needs its unit: write "30s" for seconds (or ms, m, h: "30ms", "30m")`,
		"skills_protocol:\n  blob_ttl: \"\"\n": `:2: skills_protocol.blob_ttl "": expected a duration such as 30s, 90m or 24h; leave the key out for the default`,
		"mcp_idle_timeout: soon\n":             `:1: mcp_idle_timeout "soon": expected a duration such as 30s, 90m or 24h`,
		"result_resend: [1s]\n":                `:1: result_resend: expected a duration such as 30s, 90m or 24h, got a list`,
		"state_timeout_ms: 10s\n":              "line 1: cannot unmarshal !!str `10s` into int64", // upstream's key keeps its unit
	} {
		path := writeConfig(t, yaml)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error with %q", yaml, err, want)
		}
	}
	cfg, err = Load(writeConfig(t, "skills_protocol:\n  blob_ttl: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "skills_protocol.blob_ttl 0s") {
		t.Errorf("blob_ttl 0s: %v; want it refused", err)
	}
}

// upstreamMillisecondKeys are the keys upstream's config.yaml defines in
// milliseconds (docs/reference/skills-worker.md, docs/reference/directory.md):
// they keep their names and units.
var upstreamMillisecondKeys = []string{"state_timeout_ms", "download_timeout_ms", "registry_cache_ttl_ms"}

// Every key of Config holds to the duration rule: a time.Duration is never
// named *_ms, and the only *_ms keys are upstream's (so a new setting of
// ours cannot bring back a third form).
func TestEveryDurationKeyFollowsTheRule(t *testing.T) {
	var walk func(reflect.Type, string)
	seen := map[string]bool{}
	walk = func(st reflect.Type, prefix string) {
		for key, ft := range yamlFields(st) {
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			switch {
			case ft == durationType && strings.HasSuffix(key, "_ms"):
				t.Errorf("%s%s is a duration named in milliseconds", prefix, key)
			case strings.HasSuffix(key, "_ms"):
				seen[key] = true
				if !slices.Contains(upstreamMillisecondKeys, key) {
					t.Errorf("%s%s: a setting of ours in milliseconds; make it a time.Duration (a Go duration string) named without _ms", prefix, key)
				}
			case ft.Kind() == reflect.Struct && !implementsUnmarshaler(ft):
				walk(ft, prefix+key+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	for _, k := range upstreamMillisecondKeys {
		if !seen[k] {
			t.Errorf("upstream's %s is gone from Config", k)
		}
	}
}
