package skillsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// The anthropics/skills corpus (supporting files: scripts, references,
// templates, binaries) synced from a real registry over HTTP and over
// iii: every file is the corpus's byte for byte, the lock names each,
// skills-ref accepts every folder, and a second run rewrites nothing.
func TestSyncCorpus(t *testing.T) {
	dir := corpus(t, "anthropics-skills")
	reg := startRegistry(t, registryOpts{folders: []string{dir}})
	both(t, func(t *testing.T, overHTTP bool) {
		src, url := reg.source(t, overHTTP)
		listed, err := src.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != 9 {
			t.Fatalf("the registry lists %d skills of anthropics-skills, want 9", len(listed))
		}
		work := t.TempDir()
		out := filepath.Join(work, ".claude", "skills")
		opts := Options{Source: src, SourceURL: url, Targets: []Target{{Path: out, Base: work}}, LockPath: filepath.Join(work, "skills.lock")}
		rep := syncOnce(t, opts)
		if !rep.InSync() || len(rep.Written) != 9 {
			t.Fatalf("first sync: %s\n%s", rep.Summary(), problems(rep))
		}
		lock, _, err := ReadLock(opts.LockPath)
		if err != nil {
			t.Fatal(err)
		}
		var folders []string
		for _, l := range listed {
			got := readTree(t, filepath.Join(out, l.Name), nil)
			want := map[string]string{}
			for _, f := range l.Files {
				b, err := os.ReadFile(filepath.Join(dir, l.ID, filepath.FromSlash(f.Path)))
				if err != nil {
					t.Fatal(err)
				}
				want[f.Path] = string(b)
			}
			sameTree(t, l.Name, got, want)
			e := lock.Skills[l.Name]
			if e == nil || e.ID != l.ID || e.Source != url || len(e.Files) != len(l.Files) || strings.Join(e.Targets, ",") != ".claude/skills" {
				t.Errorf("lock entry of %s: %+v", l.Name, e)
			}
			for _, f := range l.Files {
				if e != nil && e.Files[f.Path] != "sha256:"+sum([]byte(want[f.Path])) {
					t.Errorf("lock digest of %s/%s: %s", l.Name, f.Path, e.Files[f.Path])
				}
			}
			folders = append(folders, filepath.Join(out, l.Name))
		}
		if _, err := os.Stat(filepath.Join(out, stagingDir)); !os.IsNotExist(err) {
			t.Errorf("the staging folder is left behind: %v", err)
		}
		validateWithSkillsRef(t, folders...)

		// Unchanged: nothing is written, not even the lock.
		before := stamps(t, work)
		rep = syncOnce(t, opts)
		if !rep.InSync() || len(rep.Written) != 0 || rep.Unchanged != 9 || rep.LockWritten {
			t.Fatalf("second sync: %s, lock written %v\n%s", rep.Summary(), rep.LockWritten, problems(rep))
		}
		if after := stamps(t, work); after != before {
			t.Errorf("the second sync changed files:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// stamps describes every file under dir by path, inode and modification
// time: a rewrite changes it.
func stamps(tb testing.TB, dir string) string {
	tb.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.ModTime().Format(time.RFC3339Nano) + " " + inode(fi) + "\n")
		}
		return nil
	})
	return b.String()
}

// Published skills: the version the registry serves, pins by number, by
// label and by digest, and the version each came from in the lock.
func TestSyncPublishedVersions(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion one.\n")
	reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion two.\n")
	reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion three.\n")
	reg.register(t, "acme/mail", "# Mail\n\nSend mail.\n")
	reg.call(t, rules.FnSkillsLabel, map[string]any{"id": "acme/mail", "label": "production", "version": 1})
	reg.register(t, "acme/mail", "# Mail\n\nSend mail, v2.\n")
	reg.register(t, "acme/live", "# Live\n\nThe queue's depth: [depth](iii://fn/acme/depth).\n")
	v1 := sum([]byte("# PDF tools\n\nVersion one.\n"))

	both(t, func(t *testing.T, overHTTP bool) {
		src, url := reg.source(t, overHTTP)
		read := func(dir, name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name, SkillFile))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		work := t.TempDir()
		run := func(sel ...string) (*Report, string, *Lock) {
			out := filepath.Join(work, strings.Join(sel, "_"))
			lockPath := out + ".lock"
			rep := syncOnce(t, Options{Source: src, SourceURL: url, Selection: mustSelection(t, sel...), Targets: []Target{{Path: out}}, LockPath: lockPath})
			lock, _, err := ReadLock(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			return rep, out, lock
		}

		rep, out, lock := run("acme/")
		if !rep.InSync() || !strings.Contains(read(out, "pdf-tools"), "Version three.") || !strings.Contains(read(out, "mail"), "Send mail, v2.") {
			t.Fatalf("acme/: %s\n%s", rep.Summary(), problems(rep))
		}
		if !strings.HasPrefix(read(out, "pdf-tools"), "---\nname: pdf-tools\ndescription: ") {
			t.Errorf("a published skill's SKILL.md has no frontmatter: %q", read(out, "pdf-tools"))
		}
		// Both transports learn the version: over MCP from skills/list's
		// _meta (io.iii-skills/version), over iii from the catalog entry.
		if e := lock.Skills["pdf-tools"]; e.Selector != "acme/" || e.ID != "acme/pdf-tools" || e.Version != 3 || e.SHA256 == "" || e.Signature != "unsigned" {
			t.Errorf("lock entry: %+v", e)
		}
		validateWithSkillsRef(t, filepath.Join(out, "pdf-tools"), filepath.Join(out, "mail"))
		// A skill rendered live from iii://fn/ sections has no content to
		// copy: noted under a namespace, a problem when named.
		if _, err := os.Stat(filepath.Join(out, "live")); !os.IsNotExist(err) || !strings.Contains(strings.Join(rep.Notes, "\n"), "skill acme/live links to live iii://fn/ sections") {
			t.Errorf("a dynamic skill under acme/: %v %q", err, rep.Notes)
		}
		if rep, _, _ := run("acme/live"); rep.InSync() || !strings.Contains(problems(rep), "acme/live: skill acme/live links to live iii://fn/ sections that only the registry renders") {
			t.Errorf("a dynamic skill named: %s", problems(rep))
		}

		rep, out, lock = run("acme/pdf-tools@1")
		if !rep.InSync() || !strings.Contains(read(out, "pdf-tools"), "Version one.") || lock.Skills["pdf-tools"].Version != 1 {
			t.Fatalf("a pin by number: %s\n%s", rep.Summary(), problems(rep))
		}
		rep, out, _ = run("acme/", "@production")
		if !rep.InSync() || !strings.Contains(read(out, "mail"), "Send mail.") {
			t.Fatalf("@production: %s\n%s", rep.Summary(), problems(rep))
		}
		if _, err := os.Stat(filepath.Join(out, "pdf-tools")); !os.IsNotExist(err) || !strings.Contains(strings.Join(rep.Notes, "\n"), "acme/pdf-tools has no version labelled production") {
			t.Errorf("a skill without the label is synced or not noted: %v %q", err, rep.Notes)
		}

		// The registry serves skill://id@sha256:…/SKILL.md (and over iii the
		// same catalog path): a pin by digest reads on both transports.
		rep, out, lock = run("acme/pdf-tools@sha256:" + v1)
		if !rep.InSync() || !strings.Contains(read(out, "pdf-tools"), "Version one.") || lock.Skills["pdf-tools"].Version != 1 || lock.Skills["pdf-tools"].SHA256 != v1 {
			t.Fatalf("a pin by digest: %s %+v\n%s", rep.Summary(), lock.Skills["pdf-tools"], problems(rep))
		}
	})
}

// --frozen writes what the lock says, even once the registry has moved
// on, and fails naming the skill and the file where the registry's
// content differs from the lock.
func TestFrozen(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion one.\n")
	both(t, func(t *testing.T, overHTTP bool) {
		src, url := reg.source(t, overHTTP)
		work := t.TempDir()
		out := filepath.Join(work, "skills")
		opts := Options{Source: src, SourceURL: url, Selection: mustSelection(t, "acme/"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")}
		if rep := syncOnce(t, opts); !rep.InSync() {
			t.Fatal(problems(rep))
		}
		defer reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion one.\n") // for the next transport
		reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion two.\n")
		if err := os.RemoveAll(filepath.Join(out, "pdf-tools")); err != nil {
			t.Fatal(err)
		}
		lockBefore, _ := os.ReadFile(opts.LockPath)
		rep, err := Frozen(context.Background(), Options{Source: src, SourceURL: url, LockPath: opts.LockPath})
		if err != nil {
			t.Fatal(err)
		}
		// The lock has the version on both transports (over MCP from
		// skills/list's _meta): the locked version is read back.
		b, _ := os.ReadFile(filepath.Join(out, "pdf-tools", SkillFile))
		if !rep.InSync() || !strings.Contains(string(b), "Version one.") {
			t.Fatalf("frozen: %s %q\n%s", rep.Summary(), b, problems(rep))
		}
		if after, _ := os.ReadFile(opts.LockPath); string(after) != string(lockBefore) {
			t.Errorf("frozen rewrote the lock")
		}
		// A lock whose digest is not the registry's (edited by hand).
		lock, _, _ := ReadLock(opts.LockPath)
		lock.Skills["pdf-tools"].Files[SkillFile] = "sha256:" + strings.Repeat("ab", 32)
		if err := WriteLock(opts.LockPath, lock); err != nil {
			t.Fatal(err)
		}
		rep, err = Frozen(context.Background(), Options{Source: src, SourceURL: url, LockPath: opts.LockPath})
		if err != nil {
			t.Fatal(err)
		}
		if rep.InSync() || !strings.Contains(problems(rep), "pdf-tools, file SKILL.md: the registry serves sha256 "+sum(b)+" for acme/pdf-tools@") || !strings.Contains(problems(rep), "the lock says abab") {
			t.Fatalf("frozen with a wrong digest: %s\n%s", rep.Summary(), problems(rep))
		}
		// The selection must be the one the lock was made for.
		rep, _ = Frozen(context.Background(), Options{Source: src, SourceURL: url, LockPath: opts.LockPath, Selection: mustSelection(t, "other/")})
		if rep.InSync() || !strings.Contains(problems(rep), "the lock was made for the selectors [acme/]") {
			t.Fatalf("frozen with another selection: %s", problems(rep))
		}
	})
}

// The whole 322-skill corpus: every skill written as the corpus has it,
// and skills-ref's verdict on each synced folder the same as on the
// corpus's own (some corpus skills carry frontmatter keys skills-ref
// refuses; the sync must neither add nor hide a problem).
func TestSyncCorpus322(t *testing.T) {
	dir := corpus(t, "skills-322")
	reg := startRegistry(t, registryOpts{folders: []string{dir}})
	src, url := reg.source(t, true)
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	rep := syncOnce(t, Options{Source: src, SourceURL: url, Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")})
	if !rep.InSync() || len(rep.Written) != 322 {
		t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var folders, originals []string
	for _, e := range entries {
		folders = append(folders, filepath.Join(out, e.Name()))
		originals = append(originals, filepath.Join(dir, e.Name()))
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), SkillFile)); err != nil {
			t.Errorf("%s is not a corpus skill: %v", e.Name(), err)
		} else if got, _ := os.ReadFile(filepath.Join(out, e.Name(), SkillFile)); string(got) != string(b) {
			t.Errorf("%s/SKILL.md differs from the corpus", e.Name())
		}
	}
	if len(folders) != 322 {
		t.Fatalf("%d folders", len(folders))
	}
	t.Run("skills-ref", func(t *testing.T) {
		synced := skillsRefVerdicts(t, folders)
		orig := skillsRefVerdicts(t, originals)
		valid := 0
		for i, f := range folders {
			got, want := strings.Join(synced[f], "; "), strings.Join(orig[originals[i]], "; ")
			if got != want {
				t.Errorf("skills-ref on %s: %q, on the corpus's folder: %q", filepath.Base(f), got, want)
			}
			if got == "" {
				valid++
			}
		}
		t.Logf("skills-ref: %d of %d synced folders valid, every verdict the same as on the corpus", valid, len(folders))
	})
}

// A query selects the skills the registry's search ranks for it (at most
// the limit); a query nothing matches well selects nothing.
func TestSyncQuery(t *testing.T) {
	reg := startRegistry(t, registryOpts{folders: []string{folderSkills(t)}})
	both(t, func(t *testing.T, overHTTP bool) {
		src, url := reg.source(t, overHTTP)
		work := t.TempDir()
		out := filepath.Join(work, "skills")
		sel, err := NewSelection(nil, []string{"fill and merge pdf files", "qqzx vvwk"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		rep := syncOnce(t, Options{Source: src, SourceURL: url, Selection: sel, Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")})
		if !rep.InSync() || len(rep.Written) != 1 || !strings.Contains(rep.Written[0], "pdf-tools") {
			t.Fatalf("%s %v\n%s", rep.Summary(), rep.Written, problems(rep))
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), `the query "qqzx vvwk" matches no skill well`) {
			t.Errorf("notes: %v", rep.Notes)
		}
		lock, _, _ := ReadLock(filepath.Join(work, "skills.lock"))
		if e := lock.Skills["pdf-tools"]; e == nil || e.Selector != "query:fill and merge pdf files" || lock.Sources[url].QueryLimit != 1 {
			t.Errorf("lock: %+v %+v", e, lock.Sources[url])
		}
	})
}
