package clustertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func sha(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// trustVersions is a skills::versions answer with the trust fields.
type trustVersions struct {
	Deprecated string `json:"deprecated"`
	Versions   []struct {
		Version  int             `json:"version"`
		SHA256   string          `json:"sha256"`
		Message  string          `json:"message"`
		SignedBy json.RawMessage `json:"signed_by"`
		Key      string          `json:"key"`
		Yanked   string          `json:"yanked"`
	} `json:"versions"`
}

// versionsJSON is n's skills::versions of id, as JSON ("" on error).
func (n *node) versionsJSON(id string) (trustVersions, string) {
	var raw json.RawMessage
	if n.call("skills::versions", map[string]string{"id": id}, &raw) != nil {
		return trustVersions{}, ""
	}
	var l trustVersions
	_ = json.Unmarshal(raw, &l)
	return l, string(raw)
}

// publisher is one more worker on n's engine.
func (n *node) publisher(t *testing.T, name string) *iii.Client {
	t.Helper()
	c := iii.RegisterWorker(n.url(), iii.WithName(name))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTrustAcrossNodes runs on two real engines sharing Redis, a registry
// on each: every acknowledged register has a version of its own however
// two publishers race on one id through the two nodes, and pins, signature
// verdicts, yanks and deprecations are the same on both.
func TestTrustAcrossNodes(t *testing.T) {
	testutil.NeedSSHKeygen(t)
	alice := testutil.NewSSHKey(t, "ed25519")
	dir := t.TempDir()
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, []byte(alice.AllowedLine("alice@example.com", "iii-skills")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("signing:\n  allowed_signers: "+signers+"\n  require_signed: [\"signed/\"]\nversions:\n  retain: 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "--config", config)
	a, b := c.nodes[0], c.nodes[1]

	t.Run("two publishers on two nodes, 8 writers each: every acknowledged body is a version", func(t *testing.T) {
		pubs := []*iii.Client{a.publisher(t, "publisher-a"), b.publisher(t, "publisher-b")}
		const writers, bodies = 8, 48
		for round := range 3 {
			var mu sync.Mutex
			acked, refused := map[string]bool{}, 0
			next := make(chan int, bodies)
			for i := range bodies {
				next <- i
			}
			close(next)
			var wg sync.WaitGroup
			for _, pub := range pubs {
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range next {
							body := fmt.Sprintf("# race\n\nround %d, body %d\n", round, i)
							data, _ := json.Marshal(map[string]string{"id": "race/doc", "skill": body})
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
							_, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: "skills::register", Data: data, Timeout: 20 * time.Second})
							cancel()
							mu.Lock()
							if err == nil {
								acked[body] = true
							} else {
								refused++
							}
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			var la trustVersions
			testutil.Eventually(t, 20*time.Second, "both nodes list the same history", func() bool {
				l, ja := a.versionsJSON("race/doc")
				_, jb := b.versionsJSON("race/doc")
				la = l
				return ja != "" && ja == jb
			})
			have := map[string]int{}
			for _, v := range la.Versions {
				have[v.SHA256]++
			}
			for _, v := range la.Versions {
				if v.Message != "" || have[v.SHA256] > 1 {
					t.Logf("round %d: version %d (sha256 %.12s…, %d versions of it): %q", round, v.Version, v.SHA256, have[v.SHA256], v.Message)
				}
			}
			lost := 0
			for body := range acked {
				if have[sha(body)] == 0 {
					lost++
				}
			}
			t.Logf("round %d: %d bodies acknowledged, %d refused, %d in no version; %d versions listed", round, len(acked), refused, lost, len(la.Versions))
			if lost > 0 {
				t.Fatalf("round %d: %d of %d acknowledged bodies are in no version", round, lost, len(acked))
			}
			for body := range acked {
				if have[sha(body)] != 1 {
					t.Fatalf("round %d: %q is in %d versions; want one of its own", round, body, have[sha(body)])
				}
			}
			// What both nodes serve is the newest version.
			testutil.Eventually(t, 20*time.Second, "both nodes serve the newest version", func() bool {
				newest := a.fetch("iii://race/doc@latest")
				return newest != "" && a.fetch("iii://race/doc") == newest && b.fetch("iii://race/doc") == newest
			})
		}
	})

	t.Run("pins, verdicts, yanks and deprecations are the same on every node", func(t *testing.T) {
		evA, evB := a.subscribe(t), b.subscribe(t)
		one, two := "# Signed\n\none\n", "# Signed\n\ntwo\n"
		a.mustCall(t, "skills::register", map[string]string{"id": "signed/doc", "skill": one, "signature": alice.Sign(t, "iii-skills", []byte(one))}, nil)
		a.mustCall(t, "skills::register", map[string]string{"id": "signed/doc", "skill": two, "signature": alice.Sign(t, "iii-skills", []byte(two))}, nil)
		if err := b.call("skills::register", map[string]string{"id": "signed/other", "skill": one}, nil); err == nil {
			t.Fatal("an unsigned register in a namespace requiring signatures was accepted through b")
		}
		testutil.Eventually(t, 20*time.Second, "b lists the signed versions as a does", func() bool {
			la, ja := a.versionsJSON("signed/doc")
			_, jb := b.versionsJSON("signed/doc")
			return ja != "" && ja == jb && len(la.Versions) == 2 && string(la.Versions[0].SignedBy) == `"alice@example.com"` && la.Versions[0].Key == alice.Fingerprint
		})
		for _, n := range c.nodes {
			if got := n.fetch("iii://signed/doc@sha256:" + sha(one)); got != one {
				t.Fatalf("node %s reads the pin of version 1 as %q", n.name, got)
			}
		}
		a.mustCall(t, "skills::yank", map[string]any{"id": "signed/doc", "version": 2, "reason": "broken"}, nil)
		waitEvent(t, evA, "skill yank signed/doc")
		waitEvent(t, evB, "skill yank signed/doc")
		testutil.Eventually(t, 20*time.Second, "b serves version 1 after the yank", func() bool { return b.fetch("iii://signed/doc") == one })
		var pinned struct {
			Contents []struct {
				Text   string `json:"text"`
				Yanked string `json:"yanked"`
			} `json:"contents"`
		}
		b.mustCall(t, "skills::resources-read", map[string]string{"uri": "iii://signed/doc@2"}, &pinned)
		if len(pinned.Contents) != 1 || pinned.Contents[0].Text != two || pinned.Contents[0].Yanked != "broken" {
			t.Fatalf("b's pinned read of the yanked version: %+v", pinned)
		}
		b.mustCall(t, "skills::deprecate", map[string]any{"id": "signed/doc", "message": "use signed/new"}, nil)
		waitEvent(t, evA, "skill deprecate signed/doc")
		var cat struct {
			Skill struct {
				Version    int             `json:"version"`
				SHA256     string          `json:"sha256"`
				SignedBy   json.RawMessage `json:"signed_by"`
				Deprecated string          `json:"deprecated"`
			} `json:"skill"`
		}
		a.mustCall(t, "skills::catalog-get", map[string]string{"path": "signed/doc"}, &cat)
		if cat.Skill.Version != 1 || cat.Skill.SHA256 != sha(one) || string(cat.Skill.SignedBy) != `"alice@example.com"` || cat.Skill.Deprecated != "use signed/new" {
			t.Fatalf("a's catalog entry: %+v", cat.Skill)
		}
		// A label (a merge into the head's labels on Redis) through b is seen by a.
		b.mustCall(t, "skills::label", map[string]any{"id": "signed/doc", "label": "stable", "version": 1}, nil)
		testutil.Eventually(t, 20*time.Second, "a reads the label moved through b", func() bool {
			return a.fetch("iii://signed/doc@stable") == one
		})
		b.mustCall(t, "skills::unyank", map[string]any{"id": "signed/doc", "version": 2}, nil)
		waitEvent(t, evA, "skill unyank signed/doc")
		testutil.Eventually(t, 20*time.Second, "a serves version 2 again", func() bool { return a.fetch("iii://signed/doc") == two })
		_, ja := a.versionsJSON("signed/doc")
		_, jb := b.versionsJSON("signed/doc")
		if ja != jb {
			t.Fatalf("the nodes list\n%s\n%s", ja, jb)
		}
	})
}
