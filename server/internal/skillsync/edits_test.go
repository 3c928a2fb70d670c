package skillsync

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// folderSkills is a skills folder the registry serves, copied per test so
// that the test may change it.
func folderSkills(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	writeTree(tb, dir, map[string]string{
		"pdf-tools/SKILL.md":             skillMD("pdf-tools", "Fill and merge PDF files.", "# PDF tools\n\nSee [the guide](references/guide.md).\n"),
		"pdf-tools/references/guide.md":  "# Guide\n\nv1\n",
		"pdf-tools/scripts/fill.py":      "#!/usr/bin/env python3\nprint('fill')\n",
		"mail/SKILL.md":                  skillMD("mail", "Send mail.", "# Mail\n"),
		"team/review/SKILL.md":           skillMD("review", "Review a change.", "# Review\n"),
		"team/review/checklists/list.md": "- one\n",
	})
	return dir
}

// Local edits are never overwritten silently, files the sync did not
// write are never deleted, and --force overwrites.
func TestLocalEdits(t *testing.T) {
	skills := folderSkills(t)
	reg := startRegistry(t, registryOpts{folders: []string{skills}})
	src, url := reg.source(t, true)
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	opts := Options{Source: src, SourceURL: url, Selection: mustSelection(t, "pdf-tools", "mail"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")}
	if rep := syncOnce(t, opts); !rep.InSync() || len(rep.Written) != 2 {
		t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
	}
	if fi, err := os.Stat(filepath.Join(out, "pdf-tools", "scripts", "fill.py")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("a script is written without its execute bit: %v %v", fi.Mode(), err)
	}
	notes := filepath.Join(out, "pdf-tools", "NOTES.md")
	writeTree(t, out, map[string]string{"pdf-tools/NOTES.md": "mine\n", "pdf-tools/mine/deep.txt": "mine too\n"})
	guide := filepath.Join(out, "pdf-tools", "references", "guide.md")

	// The registry changes the guide: written, and the user's files stay.
	waitChange := func(want string) {
		testutil.Eventually(t, 10*time.Second, "the registry serves the new guide", func() bool {
			l, ok, err := src.Get(context.Background(), "pdf-tools")
			return err == nil && ok && len(l.Files) == 3 && l.Files[1].SHA256 == sum([]byte(want))
		})
	}
	writeTree(t, skills, map[string]string{"pdf-tools/references/guide.md": "# Guide\n\nv2\n"})
	waitChange("# Guide\n\nv2\n")
	if rep := syncOnce(t, opts); !rep.InSync() || len(rep.Written) != 1 {
		t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
	}
	if b, _ := os.ReadFile(guide); string(b) != "# Guide\n\nv2\n" {
		t.Errorf("guide: %q", b)
	}
	for _, p := range []string{notes, filepath.Join(out, "pdf-tools", "mine", "deep.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a file the sync did not write is gone: %v", err)
		}
	}

	// An edit stops the sync of that skill, naming the file; others go on.
	if err := os.WriteFile(guide, []byte("my guide\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, skills, map[string]string{"pdf-tools/references/guide.md": "# Guide\n\nv3\n"})
	waitChange("# Guide\n\nv3\n")
	rep := syncOnce(t, opts)
	if rep.InSync() || !strings.Contains(problems(rep), "pdf-tools in skills, file references/guide.md: edited since the last sync") {
		t.Fatalf("an edit did not stop the sync: %s\n%s", rep.Summary(), problems(rep))
	}
	if b, _ := os.ReadFile(guide); string(b) != "my guide\n" {
		t.Errorf("the edit was overwritten: %q", b)
	}
	// --force overwrites the edit (and still keeps the user's files).
	opts.Force = true
	if rep := syncOnce(t, opts); !rep.InSync() {
		t.Fatalf("--force: %s\n%s", rep.Summary(), problems(rep))
	}
	opts.Force = false
	if b, _ := os.ReadFile(guide); string(b) != "# Guide\n\nv3\n" {
		t.Errorf("--force did not overwrite: %q", b)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("--force removed a file the sync did not write: %v", err)
	}

	// Deselected: the sync's files go, the user's stay; an untouched
	// skill folder goes whole.
	opts.Selection = mustSelection(t, "team/review")
	rep = syncOnce(t, opts)
	if !rep.InSync() || len(rep.Removed) != 2 || len(rep.Written) != 1 {
		t.Fatalf("deselect: %s %v\n%s", rep.Summary(), rep.Removed, problems(rep))
	}
	got := readTree(t, filepath.Join(out, "pdf-tools"), nil)
	sameTree(t, "pdf-tools after removal", got, map[string]string{"NOTES.md": "mine\n", "mine/deep.txt": "mine too\n"})
	if _, err := os.Stat(filepath.Join(out, "mail")); !os.IsNotExist(err) {
		t.Errorf("mail is still there: %v", err)
	}
	lock, _, _ := ReadLock(opts.LockPath)
	if len(lock.Skills) != 1 || lock.Skills["review"] == nil || lock.Skills["review"].ID != "team/review" {
		t.Errorf("lock after deselect: %v", lock.Skills)
	}

	// A folder the sync did not write, with its own SKILL.md, is refused.
	writeTree(t, out, map[string]string{"mail/SKILL.md": skillMD("mail", "My own mail skill.", "# Mine\n")})
	opts.Selection = mustSelection(t, "team/review", "mail")
	rep = syncOnce(t, opts)
	if rep.InSync() || !strings.Contains(problems(rep), "mail in skills, file SKILL.md: a file that skills sync did not write is in the way") {
		t.Fatalf("a foreign folder: %s\n%s", rep.Summary(), problems(rep))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "mail", SkillFile)); !strings.Contains(string(b), "My own") {
		t.Errorf("the foreign SKILL.md was overwritten: %q", b)
	}
}

// --check compares the folders with the lock without the registry.
func TestCheckOffline(t *testing.T) {
	reg := startRegistry(t, registryOpts{folders: []string{folderSkills(t)}})
	src, url := reg.source(t, false)
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	opts := Options{Source: src, SourceURL: url, Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")}
	if rep := syncOnce(t, opts); !rep.InSync() || len(rep.Written) != 3 {
		t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
	}
	reg.stop()
	check := func() *Report {
		rep, err := Check(Options{LockPath: opts.LockPath})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := check(); !rep.InSync() || rep.Unchanged != 3 {
		t.Fatalf("check after sync: %s\n%s", rep.Summary(), problems(rep))
	}
	writeTree(t, out, map[string]string{"review/extra.md": "not the sync's: ignored\n", "pdf-tools/references/guide.md": "edited\n"})
	if err := os.Remove(filepath.Join(out, "review", "checklists", "list.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(out, "mail")); err != nil {
		t.Fatal(err)
	}
	rep := check()
	want := []string{
		"mail in skills: the skill folder is missing",
		"pdf-tools in skills, file references/guide.md: changed since the sync: sha256 " + sum([]byte("edited\n")),
		"review in skills, file checklists/list.md: missing",
	}
	got := problems(rep)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("check does not say %q:\n%s", w, got)
		}
	}
	if len(rep.Problems) != len(want) {
		t.Errorf("check: %d problems, want %d:\n%s", len(rep.Problems), len(want), got)
	}
	if _, err := Check(Options{LockPath: filepath.Join(work, "absent.lock")}); err == nil || !strings.Contains(err.Error(), "there is no lock at") {
		t.Errorf("check without a lock: %v", err)
	}
	// The selection and the targets a run names must be the lock's.
	rep, _ = Check(Options{LockPath: opts.LockPath, SourceURL: url, Selection: mustSelection(t, "mail")})
	if !strings.Contains(problems(rep), "the lock was made for the selectors [] of "+url+", and this run names [mail]") {
		t.Errorf("check with another selection: %s", problems(rep))
	}
}

// A version pinned in the lock that the registry no longer has is
// replaced by the version it serves, or removed, as the policy says.
func TestYankPolicy(t *testing.T) {
	reg := startRegistry(t, registryOpts{config: "versions:\n  retain: 1\n"})
	reg.register(t, "acme/pdf-tools", "# PDF tools\n\nVersion one.\n")
	both(t, func(t *testing.T, overHTTP bool) {
		src, url := reg.source(t, overHTTP)
		for _, policy := range []YankPolicy{YankReplace, YankRemove} {
			work := t.TempDir()
			out := filepath.Join(work, "skills")
			v, ok, err := src.Get(context.Background(), "acme/pdf-tools")
			if err != nil || !ok {
				t.Fatal(err)
			}
			// Pin the version served now: the one with this content.
			n := 0
			for i := 1; i < 100; i++ {
				if l, ok, _ := src.Get(context.Background(), "acme/pdf-tools@"+strconv.Itoa(i)); ok && l.skillMD() == v.skillMD() {
					n = i
				}
			}
			opts := Options{Source: src, SourceURL: url, Selection: mustSelection(t, "acme/pdf-tools@"+strconv.Itoa(n)), Targets: []Target{{Path: out}},
				LockPath: filepath.Join(work, "skills.lock"), YankPolicy: policy}
			if rep := syncOnce(t, opts); !rep.InSync() {
				t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
			}
			// Retention keeps one version: the pinned one goes.
			reg.register(t, "acme/pdf-tools", "# PDF tools\n\n"+string(policy)+" "+url+"\n")
			rep := syncOnce(t, opts)
			b, err := os.ReadFile(filepath.Join(out, "pdf-tools", SkillFile))
			notes := strings.Join(rep.Notes, "\n")
			switch policy {
			case YankReplace:
				if !rep.InSync() || !strings.Contains(string(b), string(policy)+" "+url) || !strings.Contains(notes, "version "+strconv.Itoa(n)+" of skill acme/pdf-tools is no longer served: writing the version the registry serves instead") {
					t.Fatalf("replace: %s %q %q\n%s", rep.Summary(), b, notes, problems(rep))
				}
			case YankRemove:
				if !rep.InSync() || !os.IsNotExist(err) || len(rep.Removed) != 1 || !strings.Contains(notes, "removing it (yank_policy remove)") {
					t.Fatalf("remove: %s %v %q\n%s", rep.Summary(), err, notes, problems(rep))
				}
			}
		}
	})
}
