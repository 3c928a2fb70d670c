package skillsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// --watch: a skill registered, changed or unregistered while the watch
// runs reaches the folder from the registry's notifications.
func TestWatch(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	reg.register(t, "acme/first", "# First\n\nThere before the watch.\n")
	both(t, func(t *testing.T, overHTTP bool) {
		url := reg.ws
		if overHTTP {
			url = reg.http
		}
		work := t.TempDir()
		out := filepath.Join(work, "skills")
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var rounds []string
		done := make(chan error, 1)
		go func() {
			done <- Watch(ctx, WatchOptions{
				Options:  Options{SourceURL: url, Selection: mustSelection(t, "acme/"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")},
				Open:     func(ctx context.Context) (Source, error) { return Open(ctx, url, "") },
				Interval: time.Hour, // only notifications move it
				Round: func(rep *Report, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						rounds = append(rounds, "error: "+err.Error())
					} else {
						rounds = append(rounds, rep.Summary()+" "+problems(rep))
					}
				},
			})
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Watch: %v", err)
			}
			if t.Failed() {
				mu.Lock()
				t.Logf("rounds:\n%s", strings.Join(rounds, "\n"))
				mu.Unlock()
			}
		}()
		content := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(out, name, SkillFile))
			return string(b)
		}
		testutil.Eventually(t, 10*time.Second, "the first round", func() bool { return strings.Contains(content("first"), "# First") })

		id := "acme/during-" + map[bool]string{true: "http", false: "iii"}[overHTTP]
		name := id[len("acme/"):]
		reg.register(t, id, "# During\n\nRegistered while watching.\n")
		testutil.Eventually(t, 10*time.Second, "a skill registered during the watch on disk", func() bool {
			return strings.Contains(content(name), "Registered while watching.")
		})
		reg.register(t, id, "# During\n\nChanged while watching.\n")
		testutil.Eventually(t, 10*time.Second, "a changed skill on disk", func() bool {
			return strings.Contains(content(name), "Changed while watching.")
		})
		reg.call(t, rules.FnSkillsUnregister, map[string]string{"id": id})
		testutil.Eventually(t, 10*time.Second, "an unregistered skill gone from disk", func() bool {
			_, err := os.Stat(filepath.Join(out, name))
			return os.IsNotExist(err)
		})
		// The round writes the lock after the folders.
		testutil.Eventually(t, 10*time.Second, "the lock without the unregistered skill", func() bool {
			lock, _, err := ReadLock(filepath.Join(work, "skills.lock"))
			return err == nil && lock.Skills[name] == nil && lock.Skills["first"] != nil
		})
		// A local edit made during the watch (the rounds remember digests
		// of files they read) stops the next change of that skill.
		edited := "# First\n\nedited here, " + url + "\n"
		if err := os.WriteFile(filepath.Join(out, "first", SkillFile), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		reg.register(t, "acme/first", "# First\n\nchanged in the registry over "+url+"\n")
		testutil.Eventually(t, 10*time.Second, "a round refusing to overwrite the edit", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(rounds) > 0 && strings.Contains(rounds[len(rounds)-1], "first in skills, file SKILL.md: edited since the last sync")
		})
		if content("first") != edited {
			t.Errorf("the edit was overwritten: %q", content("first"))
		}
	})
}

// --watch outlives the registry: stopped and started again on the same
// addresses, it is followed again, and what changed meanwhile arrives.
func TestWatchRegistryRestart(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	reg.register(t, "acme/first", "# First\n\nbefore the restart\n")
	both(t, func(t *testing.T, overHTTP bool) {
		url := reg.ws
		if overHTTP {
			url = reg.http
		}
		work := t.TempDir()
		out := filepath.Join(work, "skills")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Watch(ctx, WatchOptions{
				Options:  Options{SourceURL: url, Selection: mustSelection(t, "acme/"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")},
				Open:     func(ctx context.Context) (Source, error) { return Open(ctx, url, "") },
				Interval: time.Hour,
			})
		}()
		defer func() { cancel(); <-done }()
		content := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(out, name, SkillFile))
			return string(b)
		}
		testutil.Eventually(t, 10*time.Second, "the first round", func() bool { return content("first") != "" })
		reg.stop()
		reg.start(t)
		marker := "after the restart over " + url
		reg.register(t, "acme/first", "# First\n\n"+marker+"\n")
		testutil.Eventually(t, 30*time.Second, "a change after the registry came back", func() bool { return strings.Contains(content("first"), marker) })
	})
}
