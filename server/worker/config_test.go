package worker

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfigSkillsFolder(t *testing.T) {
	dir := t.TempDir()
	load := func(yaml string) (Config, error) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	cfg, err := load("skills_folder: ./skills\n")
	if err != nil || !reflect.DeepEqual([]string(cfg.SkillsFolder), []string{"./skills"}) {
		t.Fatalf("one path: %v %v", cfg.SkillsFolder, err)
	}
	if cfg.RegistryURL != "https://api.workers.iii.dev" || cfg.DownloadTimeoutMS != 60000 || cfg.RegistryCacheTTLMS != 60000 {
		t.Fatalf("iii-directory defaults: %+v", cfg)
	}
	cfg, err = load("skills_folder: [a, /b]\nregistry_cache_ttl_ms: 0\n")
	if err != nil || !reflect.DeepEqual([]string(cfg.SkillsFolder), []string{"a", "/b"}) || cfg.RegistryCacheTTLMS != 0 {
		t.Fatalf("list: %+v %v", cfg, err)
	}
	if cfg, err := load("state_timeout_ms: 5\n"); err != nil || len(cfg.SkillsFolder) != 0 {
		t.Fatalf("unset: %v %v", cfg.SkillsFolder, err)
	}
	for _, bad := range []string{"skills_folder: {a: 1}\n", "download_timeout_ms: 0\n", "registry_cache_ttl_ms: -1\n"} {
		cfg, err := load(bad)
		if err == nil || len(cfg.SkillsFolder) != 0 {
			t.Errorf("%q accepted: %+v", bad, cfg)
		}
	}
	if strings.Contains(string(ManifestJSON()), "skills_folder") {
		t.Error("the v0.2.2 manifest changed")
	}
}
