package core

import (
	"os"
	"path/filepath"
	"testing"
)

// LoadConfig reads the registry's keys; the iii-directory keys of the same
// file (skills_folder, registry_url, download_*) are server/internal/app's
// (app.DirectoryConfig) and never reach the v0.2.2 manifest.
func TestLoadConfigRegistryKeys(t *testing.T) {
	dir := t.TempDir()
	load := func(yaml string) (Config, error) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	cfg, err := load("state_timeout_ms: 5\nskills_folder: ./skills\ndownload_timeout_ms: 0\n")
	if err != nil || cfg.StateTimeoutMS != 5 || cfg.Scopes != DefaultConfig().Scopes {
		t.Fatalf("registry keys: %+v %v", cfg, err)
	}
	for _, bad := range []string{"state_timeout_ms: 0\n", "scopes: {skills: \"\"}\n"} {
		if cfg, err := load(bad); err == nil || cfg.StateTimeoutMS != DefaultConfig().StateTimeoutMS {
			t.Errorf("%q accepted: %+v", bad, cfg)
		}
	}
}
