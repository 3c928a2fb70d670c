package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/sandbox"
)

// The skills_protocol section of config.yaml reaches the runtime's
// sandbox, and bad values are refused at start with the key named.
func TestSkillsProtocolConfig(t *testing.T) {
	build := func(yaml string) error {
		t.Helper()
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		client := iii.New("ws://127.0.0.1:1", iii.WithLogger(quiet)) // never connects
		defer client.Close()
		cfg, err := Load(path)
		if err != nil {
			return err
		}
		rt, st, err := newSkillsProtocol(client, catalog.New(), cfg.SkillsProtocol, cfg.in(), t.TempDir(), quiet, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		defer rt.Close()
		if mode, why := rt.Sandbox().CgroupMode(); mode != sandbox.CgroupNone || !strings.Contains(why, "turned off") {
			t.Errorf("cgroups: off gave mode %s (%s)", mode, why)
		}
		return nil
	}
	if err := build("skills_protocol:\n  cgroups: off\n  run_memory_bytes: 268435456\n  blob_ttl: 2h\n" +
		"  secret_grants:\n    - {bundle: acme.crm.*, origin: folder, names: [CRM_TOKEN]}\n    - {bundle: \"*\", origin: any, names: [A]}\n" +
		"  published_max_bundles: 10\n  published_bundle_max_bytes: 1048576\n  published_max_bytes: 10485760\n" +
		"  tmpfs_bytes: 8388608\n  max_input_blobs: 4\n  max_input_blob_bytes: 1048576\n  max_blob_load_bytes: 16777216\n  max_batch_requests: 10\n  max_batch_response_bytes: 1048576\n"); err != nil {
		t.Fatalf("good config refused: %v", err)
	}
	for yaml, want := range map[string]string{
		"skills_protocol:\n  cgroups: maybe\n":                                                           `skills_protocol.cgroups "maybe"`,
		"skills_protocol:\n  run_memory_bytes: -1\n":                                                     "skills_protocol.run_memory_bytes -1",
		"skills_protocol:\n  blob_ttl: soon\n":                                                           `skills_protocol.blob_ttl "soon"`,
		"skills_protocol:\n  blob_store_max_bytes: -5\n":                                                 "skills_protocol.blob_store_max_bytes -5",
		"skills_protocol:\n  secret_grants: [{bundle: acme.crm.*, names: [CRM_TOKEN]}]\n":                `skills_protocol.secret_grants[0] in`,
		"skills_protocol:\n  secret_grants: [{bundle: Acme, origin: folder, names: [CRM_TOKEN]}]\n":      `bundle "Acme" must be a bundle name`,
		"skills_protocol:\n  secret_grants: [{bundle: acme.crm, origin: everywhere, names: [X]}]\n":      `origin "everywhere"`,
		"skills_protocol:\n  secret_grants: [{bundle: acme.crm, origin: published, names: [\"A-B\"]}]\n": `names entry "A-B"`,
		"skills_protocol:\n  published_bundle_max_bytes: 99999999\n":                                     "skills_protocol.published_bundle_max_bytes 99999999",
		"skills_protocol:\n  published_max_bundles: -1\n":                                                "skills_protocol.published_max_bundles -1",
		"skills_protocol:\n  tmpfs_bytes: -1\n":                                                          "skills_protocol.tmpfs_bytes -1",
		"skills_protocol:\n  max_batch_requests: -2\n":                                                   "skills_protocol.max_batch_requests -2",
	} {
		if err := build(yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error naming %s", yaml, err, want)
		}
	}
}
