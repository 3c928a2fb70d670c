package skillsprotocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/sandbox"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

// FuzzParseManifest: any skill.toml (from a folder or a bundle published
// over iii) is accepted or refused without panicking, and what is accepted
// obeys the manifest rules.
func FuzzParseManifest(f *testing.F) {
	for _, seed := range []string{
		"name = \"a.b.c\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n[permissions]\nsecrets = [\"API_KEY\"]\n",
		"name = \"a.b\"\nversion = \"1.0.0-rc.1+x\"\ndescription = \"d\"\nkind = \"instruction\"\n[input_schema]\ntype = \"object\"\n",
		"name = \"a..b\"\nversion = \"v1\"\n",
		"[[x]]\n[x.y]\nz = 1979-05-27T07:32:00Z\n",
		"name = '''multi\nline'''\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := sp.ParseManifest(data)
		if err != nil {
			return
		}
		if !sp.ValidBundleName(m.Name) || m.Version == "" || (m.Kind != "action" && m.Kind != "instruction") {
			t.Fatalf("accepted an invalid manifest: %+v", m)
		}
	})
}

// FuzzBuildEntry: the bundle loader (folders and skills::publish-bundle
// alike) accepts or refuses any set of files without panicking; an
// accepted bundle's id is its manifest name, and every file path stays
// inside the bundle.
func FuzzBuildEntry(f *testing.F) {
	manifest := "name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n"
	f.Add([]byte(manifest), []byte("---\nname: b\ndescription: x\n---\n# B\n"), "code/main.py", []byte("def main(a): return 1\n"))
	f.Add([]byte(manifest), []byte("---\n: [\n---\n"), "../x.py", []byte{0})
	f.Add([]byte("name = \"a\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n"), []byte(""), "a//b", []byte("x"))
	f.Add([]byte("kind = 1"), []byte("---\na: &a [*a]\n---\n"), "/etc/passwd", []byte("x"))
	f.Fuzz(func(t *testing.T, manifest, md []byte, path string, content []byte) {
		files := map[string][]byte{"skill.toml": manifest, "SKILL.md": md, path: content}
		e, err := sp.BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: sp.SourcePublishedBundles, Path: sp.ManifestFile}, time.Time{})
		if err != nil {
			return
		}
		m, ok := e.Extra.(*sp.Manifest)
		if !ok || sp.NameToID(m.Name) != e.ID || e.Version != m.Version {
			t.Fatalf("accepted entry %q %q does not match its manifest %+v", e.ID, e.Version, m)
		}
		for _, file := range e.Files {
			if file.Path == "" || strings.HasPrefix(file.Path, "/") || slices.Contains(strings.Split(file.Path, "/"), "..") {
				t.Fatalf("accepted a file outside the bundle: %q", file.Path)
			}
		}
	})
}

// FuzzRPCParams: any /rpc body (each tool with fuzzed params, batches) is
// answered with a JSON-RPC response or nothing, never a panic; answers
// stay under the batch cap. Runs fail fast: the sandbox has no bwrap.
func FuzzRPCParams(f *testing.F) {
	work, err := os.MkdirTemp("", "sp-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = os.RemoveAll(work) })
	mem := store.OpenMemory() // no engine per input
	f.Cleanup(func() { _ = mem.Close() })
	rt, err := sp.New(sp.Options{Catalog: catalog.New(), State: kv.Local(mem), Logger: quiet(), WorkDir: work,
		Sandbox: sandbox.New(sandbox.Config{Bwrap: "/nonexistent/bwrap"}), MaxBatchRequests: 8, MaxBatchResponseBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	for _, seed := range []string{
		`{"jsonrpc":"2.0","method":"create_blob","params":{"content":"x","kind":"text/plain"},"id":1}`,
		`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":"blob:0123456789abcdef","mode":"full","max_bytes":3},"id":1}`,
		`{"jsonrpc":"2.0","method":"run_code","params":{"language":"python","code":"def main(a): return 1","input_blobs":["blob:0123456789abcdef","blob:0123456789abcdef"],"limits":{"timeout_ms":5}},"id":"a"}`,
		`{"jsonrpc":"2.0","method":"execute_skill","params":{"name":"a.b","version":"1.0.0","args":{},"input_blobs":[]},"id":null}`,
		`{"jsonrpc":"2.0","method":"list_skills","params":{"limit":-1,"cursor":"zz"},"id":2}`,
		`{"jsonrpc":"2.0","method":"describe_skill","params":{"name":"skills.protocol.guide","detail":"full"},"id":3}`,
		`{"jsonrpc":"2.0","method":"read_skill_file","params":{"name":"skills.protocol.guide","path":"../../etc/passwd"},"id":4}`,
		`[{"jsonrpc":"2.0","method":"load_skills_protocol_guide","id":1},{"jsonrpc":"2.0","method":"load_skills_protocol_guide","id":2},{"jsonrpc":"2.0","method":"list_skills"}]`,
		`[1,2,3,4,5,6,7,8,9]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, ok := rt.HandleMessage(context.Background(), body)
		if !ok {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("answer is not JSON: %.300s", out)
		}
		if len(out) > 1<<16 && bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
			t.Fatalf("batch answer of %d bytes passes the cap", len(out))
		}
	})
}
