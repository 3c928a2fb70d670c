package skillsprotocol_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

type listResult struct {
	Skills []struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Description string `json:"description"`
		Namespace   string `json:"namespace"`
		Kind        string `json:"kind"`
	} `json:"skills"`
	NextCursor *string `json:"next_cursor"`
}

func names(l listResult) []string {
	out := make([]string, len(l.Skills))
	for i, s := range l.Skills {
		out[i] = s.Name + "@" + s.Version
	}
	return out
}

func fixtureEnv(t *testing.T) *env {
	e := newEnv(t, sp.Options{})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestListSkills(t *testing.T) {
	e := fixtureEnv(t)
	var l listResult
	e.ok("list_skills", map[string]any{}, &l)
	want := "conf.docs@0.3.0 conf.echo@1.10.0 conf.page.a@1.0.0 conf.page.b@1.0.0 conf.page.c@1.0.0 conf.page.d@1.0.0 conf.page.e@1.0.0 conf.page.f@1.0.0 conf.page.g@1.0.0 conf.secret@1.0.0 skills.protocol.guide@0.1.0"
	if got := strings.Join(names(l), " "); got != want {
		t.Fatalf("list_skills:\n got %s\nwant %s", got, want)
	}
	if l.NextCursor != nil || l.Skills[0].Kind != "" {
		t.Fatalf("names detail: %+v", l)
	}
	e.ok("list_skills", map[string]any{"detail": "summary", "namespace": "conf.echo"}, &l)
	if len(l.Skills) != 1 || l.Skills[0].Kind != "action" || l.Skills[0].Namespace != "conf" || l.Skills[0].Description == "" {
		t.Fatalf("summary: %+v", l)
	}

	// Pagination over a namespace, 3 at a time.
	var all []string
	var cursor any
	for page := 0; ; page++ {
		params := map[string]any{"namespace": "conf.page", "limit": 3}
		if cursor != nil {
			params["cursor"] = cursor
		}
		e.ok("list_skills", params, &l)
		all = append(all, names(l)...)
		if l.NextCursor == nil {
			break
		}
		cursor = *l.NextCursor
		if page > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(all) != 7 || all[0] != "conf.page.a@1.0.0" || all[6] != "conf.page.g@1.0.0" {
		t.Fatalf("pages: %v", all)
	}
	e.ok("list_skills", map[string]any{"namespace": "conf"}, &l)
	if len(l.Skills) != 10 {
		t.Fatalf("namespace conf: %v", names(l))
	}
	e.ok("list_skills", map[string]any{"namespace": "con"}, &l)
	if len(l.Skills) != 0 {
		t.Fatalf("namespace is a whole segment, got %v", names(l))
	}
	e.fails("list_skills", map[string]any{"cursor": "garbage"}, sp.CodeInvalidParams)
	e.fails("list_skills", map[string]any{"limit": 0}, sp.CodeInvalidParams)
	e.fails("list_skills", map[string]any{"limit": 100000}, sp.CodeInvalidParams)
	e.fails("list_skills", map[string]any{"detail": "all"}, sp.CodeInvalidParams)
	e.fails("list_skills", map[string]any{"limit": "3"}, sp.CodeInvalidParams)
}

func TestBadBundlesAreRefused(t *testing.T) {
	e := fixtureEnv(t)
	e.fails("describe_skill", map[string]any{"name": "conf.symlink"}, sp.CodeInvalidParams)
	e.fails("describe_skill", map[string]any{"name": "Conf_Invalid"}, sp.CodeInvalidParams)
	_, errs := sp.LoadBundles(fixtures)
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"resources/shadow is a symlink", `name "Conf_Invalid" must be dot notation`, `version "1" is not semver`, `kind "tool" must be "action" or "instruction"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in:\n%s", want, joined)
		}
	}
}

func TestDescribeAndVersions(t *testing.T) {
	e := fixtureEnv(t)
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": "conf.echo"}, &d)
	if d["version"] != "1.10.0" || d["kind"] != "action" {
		t.Fatalf("latest by semver: %v", d)
	}
	if got, _ := json.Marshal(d["versions"]); string(got) != `["1.10.0","1.9.3","1.2.0"]` {
		t.Fatalf("versions %s", got)
	}
	if _, ok := d["instructions"]; ok {
		t.Fatal("summary carries instructions")
	}
	e.ok("describe_skill", map[string]any{"name": "conf.echo", "version": "1.2.0", "detail": "full"}, &d)
	if d["version"] != "1.2.0" || !strings.Contains(d["instructions"].(string), "conf.echo 1.2.0") {
		t.Fatalf("full: %v", d)
	}
	if len(d["files"].([]any)) != 4 {
		t.Fatalf("files: %v", d["files"])
	}
	d = nil
	e.ok("describe_skill", map[string]any{"name": "conf.docs", "detail": "manifest"}, &d)
	if len(d) != 3 {
		t.Fatalf("manifest detail: %v", d)
	}
	msg := e.fails("describe_skill", map[string]any{"name": "conf.echo", "version": "9.9.9"}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "1.10.0, 1.9.3, 1.2.0") {
		t.Fatalf("unknown version message: %s", msg)
	}
	e.fails("describe_skill", map[string]any{"name": "nope.nope"}, sp.CodeInvalidParams)
	e.fails("describe_skill", map[string]any{}, sp.CodeInvalidParams)
	e.fails("describe_skill", map[string]any{"name": "conf.docs", "detail": "everything"}, sp.CodeInvalidParams)
}

func TestReadSkillFile(t *testing.T) {
	e := fixtureEnv(t)
	var f map[string]any
	e.ok("read_skill_file", map[string]any{"name": "conf.docs", "path": "resources/notes.txt"}, &f)
	if f["content"] != "notes of conf.docs\n" || f["encoding"] != "utf-8" || f["mime"] != "text/plain" {
		t.Fatalf("text file: %v", f)
	}
	e.ok("read_skill_file", map[string]any{"name": "conf.docs", "path": "resources/pixel.png"}, &f)
	b, err := base64.StdEncoding.DecodeString(f["content"].(string))
	if f["encoding"] != "base64" || err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("binary file: %v", f)
	}
	e.ok("read_skill_file", map[string]any{"name": "conf.echo", "version": "1.9.3", "path": "code/helper.py"}, &f)
	if !strings.Contains(f["content"].(string), `"1.9.3"`) {
		t.Fatalf("older version's file: %v", f)
	}
	for _, p := range []string{"../conf.secret/code/main.py", "/etc/passwd", "code/../../x", "./SKILL.md", "code//main.py"} {
		msg := e.fails("read_skill_file", map[string]any{"name": "conf.echo", "path": p}, sp.CodeInvalidParams)
		if !strings.Contains(msg, "path") {
			t.Errorf("%s: %s", p, msg)
		}
	}
	e.fails("read_skill_file", map[string]any{"name": "conf.echo", "path": "missing.txt"}, sp.CodeInvalidParams)
	e.fails("read_skill_file", map[string]any{"name": "conf.echo"}, sp.CodeInvalidParams)
}

func TestCatalogEntriesAppearAsInstructionSkills(t *testing.T) {
	e := newEnv(t, sp.Options{})
	src, err := e.cat.AddSource("published", catalog.RankPublished)
	if err != nil {
		t.Fatal(err)
	}
	pub := &catalog.Entry{ID: "resend/email/send", Kind: catalog.KindInstruction, Body: catalog.Inline("# Send email\n\nSend a message with Resend.\n"),
		Origin: catalog.Origin{Kind: catalog.OriginPublished, Source: "published"}, Modified: time.Now()}
	pub.SetSummary("# Send email\n\nSend a message with Resend.\n")
	fm, _ := catalog.ParseFrontmatter("name: pdf-processing\ndescription: Extract text from PDFs.\n")
	agent := &catalog.Entry{ID: "pdf-processing", Version: "2.1.0", Kind: catalog.KindInstruction, Frontmatter: fm,
		Body: catalog.Inline("# PDF\n\nUse pdftotext.\n"), Origin: catalog.Origin{Kind: catalog.OriginFolder, Source: "/skills", Path: "pdf-processing/SKILL.md"},
		Files: []catalog.File{catalog.NewFile("SKILL.md", []byte("---\nname: pdf-processing\n---\n# PDF\n"), time.Now(), nil)}}
	if err := src.Put(pub, agent); err != nil {
		t.Fatal(err)
	}
	var l listResult
	e.ok("list_skills", map[string]any{"detail": "summary"}, &l)
	got := map[string]string{}
	for _, s := range l.Skills {
		got[s.Name] = s.Version + " " + s.Kind + " " + s.Namespace + " " + s.Description
	}
	if got["resend.email.send"] != "0.0.0 instruction resend Send a message with Resend." {
		t.Fatalf("iii skill: %q", got["resend.email.send"])
	}
	if got["pdf-processing"] != "2.1.0 instruction pdf-processing Extract text from PDFs." {
		t.Fatalf("agent skill: %q", got["pdf-processing"])
	}
	var f map[string]any
	e.ok("read_skill_file", map[string]any{"name": "resend.email.send", "path": "SKILL.md"}, &f)
	if f["content"] != "# Send email\n\nSend a message with Resend.\n" {
		t.Fatalf("SKILL.md of an iii skill: %v", f)
	}
	e.ok("describe_skill", map[string]any{"name": "resend.email.send", "version": "0.0.0", "detail": "full"}, &f)
	msg := e.fails("execute_skill", map[string]any{"name": "pdf-processing"}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "instruction skill") {
		t.Fatalf("execute of an instruction skill: %s", msg)
	}
	if sp.NameToID("resend.email.send") != "resend/email/send" || sp.IDToName("a/b-c/d_e") != "a.b-c.d_e" {
		t.Fatal("name mapping")
	}
}

func TestGuide(t *testing.T) {
	e := newEnv(t, sp.Options{})
	var g struct {
		Content string `json:"content"`
	}
	e.ok("load_skills_protocol_guide", map[string]any{}, &g)
	e.ok("load_skills_protocol_guide", nil, &g)
	var f map[string]any
	e.ok("read_skill_file", map[string]any{"name": sp.GuideName, "version": sp.GuideVersion, "path": "SKILL.md"}, &f)
	if f["content"] != g.Content || !strings.HasPrefix(g.Content, "# Skills Protocol Overview") {
		t.Fatalf("guide differs from its SKILL.md")
	}
	for _, tool := range sp.ToolNames() {
		if !strings.Contains(g.Content, tool) {
			t.Errorf("the guide never mentions %s", tool)
		}
	}
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": sp.GuideName}, &d)
	if d["kind"] != "instruction" || d["version"] != "0.1.0" {
		t.Fatalf("guide skill: %v", d)
	}
	e.fails("load_skills_protocol_guide", map[string]any{"x": 1}, sp.CodeInvalidParams)
}

func TestToolDefinitions(t *testing.T) {
	if got := strings.Join(sp.ToolNames(), ","); got != "list_skills,describe_skill,read_skill_file,execute_skill,run_code,create_blob,read_blob,load_skills_protocol_guide" {
		t.Fatal(got)
	}
	for _, format := range []string{"schema", "openai", "anthropic"} {
		defs, err := sp.ToolDefinitions(format)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(defs)
		var arr []map[string]any
		_ = json.Unmarshal(b, &arr)
		if len(arr) != 8 {
			t.Fatalf("%s: %d tools", format, len(arr))
		}
		key := map[string]string{"schema": "parameters", "openai": "function", "anthropic": "input_schema"}[format]
		if _, ok := arr[4][key]; !ok {
			t.Fatalf("%s: no %s in %v", format, key, arr[4])
		}
	}
	if _, err := sp.ToolDefinitions("gemini"); err == nil {
		t.Fatal("unknown format accepted")
	}
}

func TestManifestRules(t *testing.T) {
	good := "name = \"a.b.c\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n[permissions]\nsecrets = [\"API_KEY\"]\n"
	m, err := sp.ParseManifest([]byte(good))
	if err != nil || m.Runtime.Export != "main" || m.Permissions.Secrets[0] != "API_KEY" {
		t.Fatalf("good manifest: %+v %v", m, err)
	}
	bad := map[string]string{
		"name = \"A.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n":                                                        "must be dot notation",
		"name = \"a..b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n":                                                       "must be dot notation",
		"name = \"a/b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n":                                                        "must be dot notation",
		"name = \"a.b\"\nversion = \"v1.0\"\ndescription = \"d\"\nkind = \"instruction\"\n":                                                         "is not semver",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"two\\nlines\"\nkind = \"instruction\"\n":                                              "one line",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n":                                                             "[runtime] is required",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"ruby\"\nentrypoint = \"m.rb\"\n":      "not supported",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"../m.py\"\n": "relative .py path",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n[permissions]\nsecrets = [\"A-B\"]\n":                    "environment variable name",
		"name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\nextra = 1\n":                                             `unknown key "extra"`,
		"version = \"1.0.0\"\n": "name is required",
		"name = [":              "skill.toml",
	}
	for src, want := range bad {
		if _, err := sp.ParseManifest([]byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

// TestSkillsFolderBundles: bundles in a skills folder (fsource) become
// Skills Protocol skills through CompleteEntry, versions side by side.
func TestSkillsFolderBundles(t *testing.T) {
	e := newEnv(t, sp.Options{})
	set, err := fsource.Open(fsource.Options{Folders: []string{fixtures}, Catalog: e.cat, Logger: quiet(),
		Bundle: func(b fsource.BundleDir, en *catalog.Entry) error { return sp.CompleteEntry(b.Manifest, en) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": "conf.echo"}, &d)
	if got, _ := json.Marshal(d["versions"]); string(got) != `["1.10.0","1.9.3","1.2.0"]` || d["kind"] != "action" {
		t.Fatalf("folder bundle: %v", d)
	}
	var f map[string]any
	e.ok("read_skill_file", map[string]any{"name": "conf.echo", "version": "1.2.0", "path": "code/helper.py"}, &f)
	if f["content"] != "VERSION = \"1.2.0\"\n" {
		t.Fatalf("file of a folder bundle: %v", f)
	}
	e.fails("describe_skill", map[string]any{"name": "Conf_Invalid"}, sp.CodeInvalidParams)
}

// Without a limit list_skills answers 50 entries and a cursor to the rest.
func TestListSkillsDefaultLimit(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 64; i++ {
		name := fmt.Sprintf("bulk.s%02d", i)
		b := filepath.Join(dir, name)
		if err := os.MkdirAll(b, 0o755); err != nil {
			t.Fatal(err)
		}
		toml := fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Bulk fixture %d.\"\nkind = \"instruction\"\n", name, i)
		if err := os.WriteFile(filepath.Join(b, "skill.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, "SKILL.md"), []byte("# "+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, sp.Options{})
	if err := e.rt.LoadFolders(dir); err != nil {
		t.Fatal(err)
	}
	var l listResult
	e.ok("list_skills", map[string]any{}, &l)
	if len(l.Skills) != sp.DefaultListLimit || sp.DefaultListLimit != 50 {
		t.Fatalf("default page: %d skills (DefaultListLimit %d), want 50", len(l.Skills), sp.DefaultListLimit)
	}
	if l.NextCursor == nil || *l.NextCursor == "" {
		t.Fatal("default page of 65 entries has no next_cursor")
	}
	rest := listResult{}
	e.ok("list_skills", map[string]any{"cursor": *l.NextCursor}, &rest)
	// 64 bundles + the built-in guide.
	if len(rest.Skills) != 15 || rest.NextCursor != nil {
		t.Fatalf("second page: %d skills, cursor %v; want 15 and none", len(rest.Skills), rest.NextCursor)
	}
}

// A bundle in a skills folder (fsource) is held to the --sp-bundles rule:
// a symlink anywhere in it, escaping or not, refuses the whole bundle
// (fsource alone would serve it without an escaping link, or follow an
// inner one).
func TestSkillsFolderBundleWithSymlinkIsRefused(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"sym.inner", "sym.escape", "sym.clean"} {
		write(name+"/skill.toml", fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Symlink fixture.\"\nkind = \"instruction\"\n", name))
		write(name+"/SKILL.md", "# "+name+"\n")
		write(name+"/resources/real.txt", "real\n")
	}
	if err := os.Symlink("real.txt", filepath.Join(root, "sym.inner/resources/alias.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(root, "sym.escape/resources/host.txt")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, sp.Options{})
	set, err := fsource.Open(fsource.Options{Folders: []string{root}, Catalog: e.cat, Logger: quiet(),
		Bundle: func(b fsource.BundleDir, en *catalog.Entry) error { return sp.CompleteEntry(b.Manifest, en) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": "sym.clean"}, &d)
	e.fails("describe_skill", map[string]any{"name": "sym.inner"}, sp.CodeInvalidParams)
	e.fails("describe_skill", map[string]any{"name": "sym.escape"}, sp.CodeInvalidParams)
	var problems []string
	for _, p := range set.Problems() {
		problems = append(problems, fmt.Sprintf("%+v", p))
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"resources/alias.txt is a symlink (bundles hold regular files only)", "resources/host.txt is a symlink"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems miss %q:\n%s", want, joined)
		}
	}
	// The same folder through --sp-bundles: the same two refused.
	entries, errs := sp.LoadBundles(root)
	if len(entries) != 1 || entries[0].ID != "sym/clean" || len(errs) != 2 {
		t.Fatalf("LoadBundles: %d entries, errors %v", len(entries), errs)
	}
}
