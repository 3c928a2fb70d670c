package main

// Downloads (directory::skills::download, with download_hosts on) against
// the operator's skills folder, over real sockets against the skills
// binary: any engine client may start one, so what it writes is never
// the operator's. It never overwrites a folder or file the operator put
// there, never takes a namespace the operator serves, serves only ids of
// its own namespace, and its bundles get no folder-origin secret grant.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// registryOf serves the workers registry's download answer for each
// worker: {name, skills: [{path, content}]}.
func registryOf(t *testing.T, workers map[string]map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/w/"), "/skills")
		files, ok := workers[name]
		if !ok {
			http.Error(w, "no such worker", http.StatusNotFound)
			return
		}
		var skills []map[string]string
		for p, c := range files {
			skills = append(skills, map[string]string{"path": p, "content": c})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": name, "skills": skills})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// prefixed is files with every path under dir.
func prefixed(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range files {
		out[dir+"/"+p] = c
	}
	return out
}

func TestAttackDownloadsCannotTakeTheOperatorsFolder(t *testing.T) {
	t.Setenv("CRM_TOKEN", "operator-secret")
	skills := t.TempDir()
	writeBundle(t, filepath.Join(skills, "acme", "crm", "sync"), bundleFiles("acme.crm.sync", "1.0.0", "operator", "CRM_TOKEN"))
	writeBundle(t, filepath.Join(skills, "notes"), map[string]string{"README.txt": "the operator's notes\n"})
	reg := registryOf(t, map[string]map[string]string{
		// Over the operator's bundle, in its namespace.
		"acme": prefixed("crm/sync", bundleFiles("acme.crm.sync", "9.0.0", "attacker", "CRM_TOKEN")),
		// Into a folder the operator made (nothing served from it).
		"notes": {"README.txt": "attacker\n", "evil.md": "# evil\n"},
		// Its own namespace, declaring the operator's grant's names.
		"tools": prefixed("x", bundleFiles("tools.x", "1.0.0", "downloaded", "CRM_TOKEN")),
		// Its own namespace folder, a bundle named in another namespace.
		"evil": prefixed("steal", bundleFiles("acme.crm.steal", "1.0.0", "attacker", "CRM_TOKEN")),
	})
	regHost := strings.TrimPrefix(reg.URL, "http://")
	s := startSPServer(t, fmt.Sprintf("registry_url: %s\ndownload_hosts: [%q]\nskills_protocol:\n  secret_grants:\n"+
		"    - {bundle: acme.crm.*, origin: folder, names: [CRM_TOKEN]}\n    - {bundle: tools.*, origin: folder, names: [CRM_TOKEN]}\n", reg.URL, regHost),
		"--skills-folder", skills)
	c := s.attacker()
	download := func(worker string) (json.RawMessage, error) {
		return trigger(t, c, "directory::skills::download", map[string]any{"worker": worker})
	}

	_, err := download("acme")
	wantForbidden(t, "downloading acme over the operator's acme/crm/sync", err,
		`the operator serves "acme/crm/sync" from a skills or bundle folder, in namespace "acme"`)
	_, err = download("notes")
	wantForbidden(t, "downloading into the operator's notes/", err, "the skills folder already has notes/, which no download made")
	for rel, want := range map[string]string{"notes/README.txt": "the operator's notes\n", "acme/crm/sync/code/main.py": bundleFiles("acme.crm.sync", "1.0.0", "operator", "CRM_TOKEN")["code/main.py"]} {
		if b, err := os.ReadFile(filepath.Join(skills, rel)); err != nil || string(b) != want {
			t.Fatalf("%s after the refused downloads: %q %v", rel, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(skills, "notes", "evil.md")); err == nil {
		t.Fatal("a refused download wrote notes/evil.md")
	}
	if r := executeBundle(t, s.rpcURL, "acme.crm.sync"); r.Output.Marker != "operator" || r.Output.Env["CRM_TOKEN"] != "operator-secret" {
		t.Fatalf("acme.crm.sync after the refused download: %+v", r.Output)
	}

	// A new namespace is written and served, as downloaded content: the
	// grant of origin folder does not reach its bundle.
	if _, err := download("tools"); err != nil {
		t.Fatalf("downloading tools: %v", err)
	}
	if r := executeBundle(t, s.rpcURL, "tools.x"); r.Output.Marker != "downloaded" || r.Output.Env["CRM_TOKEN"] != "" {
		t.Fatalf("downloaded tools.x: %+v; want it run without the folder-origin secret", r.Output)
	}
	// A bundle named outside the download's namespace is not served.
	if _, err := download("evil"); err != nil {
		t.Fatalf("downloading evil: %v", err)
	}
	if _, resp := rpcCall(t, s.rpcURL, "describe_skill", map[string]any{"name": "acme.crm.steal"}); resp["error"] == nil {
		t.Fatalf("acme.crm.steal, downloaded into evil/, is served: %s", resp["result"])
	}
	diag, err := trigger(t, c, "directory::skills::diagnostics", map[string]any{})
	if err != nil || !strings.Contains(string(diag), `may only serve ids in namespace evil`) {
		t.Fatalf("diagnostics do not say why acme.crm.steal is not served: %s %v", diag, err)
	}

	// Downloading tools again rewrites what the download wrote; once the
	// operator edits a file there, it is the operator's.
	if _, err := download("tools"); err != nil {
		t.Fatalf("downloading tools again: %v", err)
	}
	edited := filepath.Join(skills, "tools", "x", "SKILL.md")
	if err := os.WriteFile(edited, []byte("# tools.x\n\nThe operator's edit.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = download("tools")
	wantForbidden(t, "downloading over the operator's edit", err, "tools/x/SKILL.md was changed or added after the last download of tools (by the operator)")
	if b, _ := os.ReadFile(edited); !strings.Contains(string(b), "The operator's edit.") {
		t.Fatalf("the operator's edit was overwritten: %q", b)
	}
}
