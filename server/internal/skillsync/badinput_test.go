package skillsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// A lock edited by hand: each mistake is an error naming the lock, the
// place and what was expected, before anything is written.
func TestHandEditedLock(t *testing.T) {
	skills := folderSkills(t)
	reg := startRegistry(t, registryOpts{folders: []string{skills}})
	src, url := reg.source(t, true)
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	opts := Options{Source: src, SourceURL: url, Selection: mustSelection(t, "pdf-tools"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")}
	if rep := syncOnce(t, opts); !rep.InSync() {
		t.Fatal(problems(rep))
	}
	good, _ := os.ReadFile(opts.LockPath)
	before := readTree(t, out, nil)
	edit := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	digest := "sha256:" + sum([]byte(before["pdf-tools/references/guide.md"]))
	for _, c := range []struct{ name, lock, want string }{
		{"not JSON", edit(`"lock_version": 1,`, `"lock_version": 1`), "line 3, column 3: not valid JSON"},
		{"cut short", string(good[:len(good)/2]), "not valid JSON: the file ends inside a value"},
		{"an unknown key", edit(`"yank_policy"`, `"yank_policcy"`), `line 3, column 3: unknown key "yank_policcy"`},
		{"a digest cut short", edit(digest, digest[:20]), `skills["pdf-tools"]: skill pdf-tools: file references/guide.md has digest`},
		{"a digest without its algorithm", edit(digest, strings.TrimPrefix(digest, "sha256:")), `files["references/guide.md"] is "`},
		{"a version that is text", edit(`"id": "pdf-tools",`, `"id": "pdf-tools", "version": "3",`), "skills.version is string; expected int"},
		{"a folder name with a slash", edit(`"pdf-tools": {`, `"../pdf-tools": {`), `name "../pdf-tools" is not a valid folder name`},
		{"another lock version", edit(`"lock_version": 1`, `"lock_version": 7`), "lock_version is 7; this skills reads lock_version 1"},
		{"a bad yank policy", edit(`"replace"`, `"keep"`), `yank policy "keep": expected replace`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(opts.LockPath, []byte(c.lock), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Sync(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), "lock "+opts.LockPath+": ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			if _, err := Check(Options{LockPath: opts.LockPath}); err == nil {
				t.Error("check accepts the lock")
			}
			sameTree(t, "the folder", readTree(t, out, nil), before)
		})
	}
	// A well-formed digest that is not the file's: --check says so; a sync
	// that finds the file to be what the registry serves corrects the
	// lock, and one that would change it counts it as edited.
	t.Run("a digest that is not the file's", func(t *testing.T) {
		if err := os.WriteFile(opts.LockPath, []byte(strings.Replace(string(good), digest, "sha256:"+strings.Repeat("0", 64), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, _ := Check(Options{LockPath: opts.LockPath})
		if !strings.Contains(problems(rep), "pdf-tools in skills, file references/guide.md: changed since the sync") {
			t.Fatalf("check: %s", problems(rep))
		}
		if rep := syncOnce(t, opts); !rep.InSync() || !rep.LockWritten {
			t.Fatalf("sync: %s", problems(rep))
		}
		if b, _ := os.ReadFile(opts.LockPath); string(b) != string(good) {
			t.Fatalf("the lock is not corrected:\n%s", b)
		}
		if err := os.WriteFile(opts.LockPath, []byte(strings.Replace(string(good), digest, "sha256:"+strings.Repeat("0", 64), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		writeTree(t, skills, map[string]string{"pdf-tools/references/guide.md": "# Guide\n\nnew\n"})
		testutil.Eventually(t, 10*time.Second, "the registry serves the new guide", func() bool {
			l, ok, err := src.Get(context.Background(), "pdf-tools")
			return err == nil && ok && l.Files[1].SHA256 == sum([]byte("# Guide\n\nnew\n"))
		})
		rep = syncOnce(t, opts)
		if rep.InSync() || !strings.Contains(problems(rep), "pdf-tools in skills, file references/guide.md: edited since the last sync") {
			t.Fatalf("%s", problems(rep))
		}
		sameTree(t, "the folder", readTree(t, out, nil), before)
	})
}

// Targets that are links, and skill names that collide.
func TestBadTargetsAndNames(t *testing.T) {
	skills := folderSkills(t)
	writeTree(t, skills, map[string]string{
		"team/mail/SKILL.md": skillMD("mail", "Another skill named mail.", "# Mail of the team\n"),
	})
	reg := startRegistry(t, registryOpts{folders: []string{skills}})
	src, url := reg.source(t, false)
	work := t.TempDir()
	elsewhere := filepath.Join(work, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(target Target, sel ...string) *Report {
		return syncOnce(t, Options{Source: src, SourceURL: url, Selection: mustSelection(t, sel...), Targets: []Target{target}, LockPath: filepath.Join(work, "skills.lock")})
	}

	// The target folder is a link to somewhere else.
	if err := os.MkdirAll(filepath.Join(work, "project", ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(work, "project", ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	rep := run(Target{Path: filepath.Join(work, "project", ".claude", "skills"), Base: filepath.Join(work, "project")}, "pdf-tools")
	if rep.InSync() || !strings.Contains(problems(rep), "skills is a symbolic link to "+elsewhere+": skills sync writes only into real folders") {
		t.Fatalf("a linked target: %s", problems(rep))
	}
	// A folder above it, inside the project, is a link.
	if err := os.Symlink(elsewhere, filepath.Join(work, "project", ".agents")); err != nil {
		t.Fatal(err)
	}
	rep = run(Target{Path: filepath.Join(work, "project", ".agents", "skills"), Base: filepath.Join(work, "project")}, "pdf-tools")
	if rep.InSync() || !strings.Contains(problems(rep), ".agents is a symbolic link to "+elsewhere) {
		t.Fatalf("a target under a link: %s", problems(rep))
	}
	// The skill's own folder is a link.
	out := filepath.Join(work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(out, "pdf-tools")); err != nil {
		t.Fatal(err)
	}
	rep = run(Target{Path: out}, "pdf-tools")
	if rep.InSync() || !strings.Contains(problems(rep), "pdf-tools is a symbolic link to "+elsewhere) {
		t.Fatalf("a linked skill folder: %s", problems(rep))
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("written through a link: %v", entries)
	}
	if err := os.Remove(filepath.Join(out, "pdf-tools")); err != nil {
		t.Fatal(err)
	}

	// Two selected skills with one name: neither is written, and the
	// folder synced before stays.
	if rep := run(Target{Path: out}, "mail"); !rep.InSync() {
		t.Fatal(problems(rep))
	}
	rep = run(Target{Path: out}, "mail", "team/")
	if rep.InSync() || !strings.Contains(problems(rep), "skills mail (selected by mail) and team/mail (selected by team/) both have the name mail") {
		t.Fatalf("two skills named mail: %s", problems(rep))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "mail", SkillFile)); !strings.Contains(string(b), "Send mail.") {
		t.Errorf("the mail folder changed: %q", b)
	}
	// Two sources with one name: the lock has mail from iii; HTTP is
	// another source.
	hsrc, hurl := reg.source(t, true)
	rep = syncOnce(t, Options{Source: hsrc, SourceURL: hurl, Selection: mustSelection(t, "mail"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")})
	if rep.InSync() || !strings.Contains(problems(rep), "the folder mail holds skill mail synced from "+url+": the two sources give the same skill name") {
		t.Fatalf("two sources: %s", problems(rep))
	}
	// A skill the registry does not serve, and says why (over iii).
	reg.register(t, "acme/snake_case", "# Snake\n\nAn id whose last segment is no Agent Skills name.\n")
	rep = run(Target{Path: out}, "acme/snake_case")
	if rep.InSync() || !strings.Contains(problems(rep), `acme/snake_case: the registry does not serve it: name "snake_case" is not a valid Agent Skills name`) {
		t.Fatalf("a skill the registry does not serve: %s", problems(rep))
	}
	// Two explicit selectors of one skill that disagree.
	rep = run(Target{Path: out}, "mail", "mail@3")
	if rep.InSync() || !strings.Contains(problems(rep), "selectors mail and mail@3 ask for two versions of skill mail") {
		t.Fatalf("two pins: %s", problems(rep))
	}
}

// A token the registry requires: refused without it, with a message that
// says how to give it; accepted with it.
func TestToken(t *testing.T) {
	reg := startRegistry(t, registryOpts{token: "s3cret"})
	if _, err := Open(context.Background(), reg.http, ""); err == nil || !strings.Contains(err.Error(), "wants a bearer token (401): give it with --token") {
		t.Fatalf("no token: %v", err)
	}
	if _, err := Open(context.Background(), reg.http, "wrong"); err == nil || !strings.Contains(err.Error(), "refused the token given with --token (401)") {
		t.Fatalf("a wrong token: %v", err)
	}
	src, err := Open(context.Background(), reg.http, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
}

// A target on a read-only file system: `skills sync` (the binary) stops
// with an error naming the target; the folder and the lock stay as they
// were. The file system is made read-only in a mount namespace of the
// command's own (unshare), so nothing outside the test sees it.
func TestReadOnlyTarget(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("not run: no unshare command")
	}
	reg := startRegistry(t, registryOpts{folders: []string{folderSkills(t)}})
	bin := testutil.SkillsBinary(t)
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	lock := filepath.Join(work, "skills.lock")
	sync := func(readOnly bool, sel ...string) (string, int) {
		args := append([]string{"sync", "--url", reg.http, "--dir", out, "--lock", lock}, sel...)
		cmd := exec.Command(bin, args...)
		if readOnly {
			script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`
			cmd = exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", work, bin}, args...)...)
		}
		cmd.Env = cleanEnv()
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), code
	}
	if msg, code := sync(false, "pdf-tools"); code != 0 {
		t.Fatalf("sync: %d %s", code, msg)
	}
	before := readTree(t, work, nil)
	msg, code := sync(true, "pdf-tools", "mail")
	if strings.Contains(msg, "mount:") || strings.Contains(msg, "unshare:") {
		t.Skipf("not run: a read-only mount needs a mount namespace this host does not allow: %s", msg)
	}
	if code != 1 || !strings.Contains(msg, "mail in skills: cannot write into target "+out) || !strings.Contains(msg, "read-only file system") {
		t.Fatalf("a read-only target: exit %d\n%s", code, msg)
	}
	sameTree(t, "the read-only folder", readTree(t, work, nil), before)
}
