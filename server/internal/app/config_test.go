package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/engine"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadScopedTokens is engine_tokens of the file at path, checked against
// the shared token (what the server does at start).
func loadScopedTokens(path, shared string) ([]engine.ScopedToken, error) {
	cfg, err := Load(path)
	if errors.Is(err, ErrNoFile) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg.Engine.Token = shared
	return cfg.ScopedTokens()
}

func TestLoadScopedTokens(t *testing.T) {
	t.Setenv("ACME_TEST_TOKEN", "acme-token-from-env-01")
	got, err := loadScopedTokens(writeConfig(t, `
engine_tokens:
  - name: acme
    token_env: ACME_TEST_TOKEN
    namespaces: [acme]
  - name: billing
    token: billing-token-0123456
    namespaces: [billing, invoices]
`), "")
	if err != nil || len(got) != 2 || got[0].Token != "acme-token-from-env-01" || got[1].Namespaces[1] != "invoices" {
		t.Fatalf("tokens = %+v, %v", got, err)
	}
	for yaml, want := range map[string]string{
		"engine_tokens: acme": "expected a list of {name, token or token_env, namespaces}",
		"engine_tokens: [{name: a, token: 0123456789abcdef, token_env: X, namespaces: [a]}]": "set token or token_env, not both",
		"engine_tokens: [{name: a, token_env: SKILLS_TEST_UNSET_VAR, namespaces: [a]}]":      "SKILLS_TEST_UNSET_VAR is empty or unset",
		"engine_tokens: [{name: a, token: short, namespaces: [a]}]":                          "at least 16 characters",
	} {
		if _, err := loadScopedTokens(writeConfig(t, yaml), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v; want %q", yaml, err, want)
		}
	}
	// A missing file keeps the defaults: no tokens.
	if got, err := loadScopedTokens(filepath.Join(t.TempDir(), "none.yaml"), ""); err != nil || len(got) != 0 {
		t.Errorf("missing file: %+v, %v; want none", got, err)
	}
	// A malformed one is refused (it used to mean no tokens).
	if _, err := loadScopedTokens(writeConfig(t, "scopes: ["), ""); err == nil || !strings.Contains(err.Error(), "is not valid YAML") {
		t.Errorf("malformed file: %v; want it refused", err)
	}
}
