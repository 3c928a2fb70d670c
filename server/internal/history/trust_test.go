package history

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

func sumOf(content string) string {
	d := Digest(content)
	return hex.EncodeToString(d[:])
}

// A pin by digest names exactly one version; a digest of the wrong form is
// refused as input, one no version has is NotFound naming it.
func TestResolveByDigest(t *testing.T) {
	h, _ := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	mustRecord(t, h, "a", "two")
	c, p, err := h.Select("a", "sha256:"+sumOf("one"))
	if err != nil || c != "one" || p.Version != 1 {
		t.Fatalf("pin of one: %q %+v %v", c, p, err)
	}
	var he *Error
	for _, bad := range []string{"sha256:abc", "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("g", 64), "sha256:" + strings.Repeat("a", 65)} {
		_, err := h.Resolve("a", bad)
		if !errors.As(err, &he) || he.NotFound || !strings.Contains(err.Error(), "expected 64 lowercase hex digits") {
			t.Errorf("Resolve(%q) = %v; want an input error naming the form", bad, err)
		}
	}
	missing := strings.Repeat("0", 64)
	if _, err := h.Resolve("a", "sha256:"+missing); !errors.As(err, &he) || !he.NotFound || !strings.Contains(err.Error(), missing) {
		t.Fatalf("unknown digest: %v", err)
	}
}

// A yanked version leaves latest, labels and the serve label (they fall
// back to the newest one not yanked), stays readable by pin with its
// reason, and when every version is yanked nothing is served.
func TestYankFallsBackAndPinsStillRead(t *testing.T) {
	h, _ := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	mustRecord(t, h, "a", "two")
	mustRecord(t, h, "a", "three")
	if _, err := h.Label("a", "stable", 2, ""); err != nil {
		t.Fatal(err)
	}
	if changed, err := h.Yank("a", 3, "leaks a token"); err != nil || !changed {
		t.Fatalf("yank: %v %v", changed, err)
	}
	if changed, _ := h.Yank("a", 3, "leaks a token"); changed {
		t.Fatal("the same yank twice changed something")
	}
	if c, p, err := h.Select("a", "latest"); err != nil || c != "two" || p.Yanked != "" {
		t.Fatalf("latest after yanking 3: %q %+v %v", c, p, err)
	}
	if n, pinned, w := h.Serving("a", ""); n != 2 || !pinned || w != "" {
		t.Fatalf("serving: %d %v %q", n, pinned, w)
	}
	if c, p, err := h.Select("a", "3"); err != nil || c != "three" || p.Yanked != "leaks a token" {
		t.Fatalf("pin of the yanked version: %q %+v %v", c, p, err)
	}
	if _, p, err := h.Select("a", "sha256:"+sumOf("three")); err != nil || p.Yanked != "leaks a token" {
		t.Fatalf("digest pin of the yanked version: %+v %v", p, err)
	}
	if _, err := h.Label("a", "x", 3, ""); err == nil || !strings.Contains(err.Error(), "is yanked (leaks a token)") {
		t.Fatalf("label on a yanked version: %v", err)
	}
	if _, err := h.Yank("a", 2, "also bad"); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := h.Serving("a", "stable"); n != 1 {
		t.Fatalf("the serve label's version yanked: serving %d; want 1", n)
	}
	if _, err := h.Yank("a", 1, "all bad"); err != nil {
		t.Fatal(err)
	}
	if n, _, w := h.Serving("a", ""); n != 0 || w != "leaks a token" {
		t.Fatalf("every version yanked: serving %d, withdrawn %q", n, w)
	}
	var he *Error
	if _, _, err := h.Select("a", "latest"); !errors.As(err, &he) || !he.NotFound || !strings.Contains(err.Error(), "every kept version is yanked (leaks a token)") {
		t.Fatalf("latest with every version yanked: %v", err)
	}
	if changed, err := h.Unyank("a", 3); err != nil || !changed {
		t.Fatalf("unyank: %v %v", changed, err)
	}
	if n, pinned, _ := h.Serving("a", ""); n != 3 || pinned {
		t.Fatalf("after unyank: %d %v", n, pinned)
	}
	if _, err := h.Yank("a", 9, "x"); !errors.As(err, &he) || !he.NotFound || !strings.Contains(err.Error(), "no version 9") {
		t.Fatalf("yank of an unknown version: %v", err)
	}
	if _, err := h.Yank("a", 1, ""); err == nil || !strings.Contains(err.Error(), "needs a reason") {
		t.Fatalf("yank without a reason: %v", err)
	}
	if _, err := h.Yank("nope", 1, "x"); !errors.As(err, &he) || !he.NotFound {
		t.Fatalf("yank of an unknown id: %v", err)
	}
	l, err := h.Versions("a")
	if err != nil || l.Versions[0].Yanked != "" || l.Versions[1].Yanked != "also bad" {
		t.Fatalf("listing: %+v %v", l, err)
	}
	// Publishing the yanked content again does not unyank it.
	if _, created := mustRecord(t, h, "a", "three"); created {
		t.Fatal("the newest content again made a version")
	}
}

func TestDeprecateOutlivesNothingButItself(t *testing.T) {
	h, _ := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	if prev, err := h.Deprecate("a", "use b"); err != nil || prev != "" {
		t.Fatal(prev, err)
	}
	if h.Deprecated("a") != "use b" {
		t.Fatal("not deprecated")
	}
	mustRecord(t, h, "a", "two")
	if l, _ := h.Versions("a"); l.Deprecated != "use b" {
		t.Fatalf("a new version dropped the deprecation: %+v", l)
	}
	if prev, err := h.Deprecate("a", ""); err != nil || prev != "use b" || h.Deprecated("a") != "" {
		t.Fatal(prev, err)
	}
	if _, err := h.Deprecate("none", "x"); err == nil {
		t.Fatal("deprecating an id without versions")
	}
}

// A version records its signature and verdict; the same content signed
// by another key (or now unsigned) is a new version, by the same key not.
func TestSignatureVerdictIsPartOfTheVersion(t *testing.T) {
	h, _ := newMem(t, Config{})
	signed := Meta{Signature: "-----BEGIN SSH SIGNATURE-----\nx\n-----END SSH SIGNATURE-----\n", SignedBy: "alice@example.com", Key: "SHA256:abc"}
	v, created, err := h.Record("a", "body", signed, nil)
	if err != nil || !created || v.SignedBy == nil || *v.SignedBy != "alice@example.com" {
		t.Fatalf("%+v %v %v", v, created, err)
	}
	if _, created, _ := h.Record("a", "body", signed, nil); created {
		t.Fatal("same content, same key: a new version")
	}
	if v, created, _ := h.Record("a", "body", Meta{}, nil); !created || v.SignedBy != nil {
		t.Fatalf("same content unsigned: %+v %v", v, created)
	}
	untrusted := Meta{Signature: "sig", Key: "SHA256:other"}
	v, _, _ = h.Record("a", "body", untrusted, nil)
	l, err := h.Versions("a")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(l.Versions[0])
	if v.Version != 3 || !strings.Contains(string(got), `"signed_by":null,"key":"SHA256:other","signature":"sig"`) {
		t.Fatalf("untrusted signer listed as %s", got)
	}
	if first, _ := json.Marshal(l.Versions[2]); !strings.Contains(string(first), `"signed_by":"alice@example.com","key":"SHA256:abc"`) {
		t.Fatalf("signed version listed as %s", first)
	}
	f, ok := h.Facts("a", 1)
	if !ok || f.SignedBy != "alice@example.com" || f.Key != "SHA256:abc" || f.SHA256 != sumOf("body") {
		t.Fatalf("facts: %+v", f)
	}
}

// A content row rewritten outside the registry (state::set on the
// versions scope, then a restart) is refused on every read, naming the id
// and the version, whether or not its recorded sha256 was changed too.
func TestRewrittenRowIsRefused(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	cfg := Config{Scope: "skills", Noun: "skill"}
	h := New(kv.Local(st), cfg)
	mustRecord(t, h, "victim/doc", "honest")
	mustRecord(t, h, "victim/doc", "newer")
	key := keyOf(h, "victim/doc", 1)
	raw, _, _ := st.Get("skills.versions", key)
	for _, tamper := range []struct{ name, old, new string }{
		{"content only", `"content":"honest"`, `"content":"ATTACKER"`},
		{"content and sha256", `"sha256":"` + sumOf("honest") + `","message":"m","author":"a","content":"honest"`,
			`"sha256":"` + sumOf("ATTACKER") + `","message":"m","author":"a","content":"ATTACKER"`},
	} {
		forged := strings.Replace(string(raw), tamper.old, tamper.new, 1)
		if forged == string(raw) {
			t.Fatalf("%s: the row %s has no %s", tamper.name, raw, tamper.old)
		}
		if _, err := st.Set("skills.versions", key, json.RawMessage(forged)); err != nil {
			t.Fatal(err)
		}
		fresh := New(kv.Local(st), cfg) // a restart: nothing cached
		var he *Error
		_, _, err := fresh.Select("victim/doc", "1")
		if !errors.As(err, &he) || !he.Corrupt || !strings.Contains(err.Error(), "version 1 of skill victim/doc is refused") {
			t.Fatalf("%s: read of the rewritten row: %v", tamper.name, err)
		}
		if _, err := fresh.Versions("victim/doc"); !errors.As(err, &he) || !he.Corrupt {
			t.Fatalf("%s: listing with a rewritten row: %v", tamper.name, err)
		}
		if c, _, err := fresh.Select("victim/doc", "2"); err != nil || c != "newer" {
			t.Fatalf("%s: the untouched version: %q %v", tamper.name, c, err)
		}
	}
}

// Two registry instances on one shared store, sixteen writers registering
// 48 distinct bodies of one id at once: every acknowledged body is a
// version of its own, and both instances list the same history.
func TestSharedInstancesNeverLoseAnAcknowledgedVersion(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	cfg := Config{Scope: "skills", Noun: "skill", Retain: 1000}
	nodes := []*History{New(sharedStore{kv.Local(st)}, cfg), New(sharedStore{kv.Local(st)}, cfg)}
	const writers, bodies = 8, 48
	for round := range 3 {
		var mu sync.Mutex
		acked := map[string]int{}
		var wg sync.WaitGroup
		next := make(chan int, bodies)
		for i := range bodies {
			next <- i
		}
		close(next)
		for node := range nodes {
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						body := fmt.Sprintf("round %d body %d", round, i)
						v, _, err := nodes[node].Record("x", body, Meta{}, nil)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked[body] = v.Version
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		for _, n := range nodes {
			if err := n.Refresh("x"); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[int]bool{}
		for body, n := range acked {
			if seen[n] {
				t.Fatalf("round %d: version %d acknowledged twice", round, n)
			}
			seen[n] = true
			for i, node := range nodes {
				c, err := node.Content("x", n)
				if err != nil || c != body {
					t.Fatalf("round %d: node %d reads version %d as %q, %v; want %q", round, i, n, c, err, body)
				}
			}
		}
		if len(acked) != bodies {
			t.Fatalf("round %d: %d acknowledged", round, len(acked))
		}
		a, _ := nodes[0].Versions("x")
		b, _ := nodes[1].Versions("x")
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) || len(a.Versions) != (round+1)*bodies {
			t.Fatalf("round %d: the nodes list different histories (%d and %d versions)", round, len(a.Versions), len(b.Versions))
		}
	}
}

// On shared state a head of the format before is converted by its first
// change, keeping its versions and labels.
func TestSharedConvertsALegacyHead(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	local := New(kv.Local(st), Config{Scope: "skills", Noun: "skill"})
	mustRecord(t, local, "a", "one")
	mustRecord(t, local, "a", "two")
	k1, k2 := keyOf(local, "a", 1), keyOf(local, "a", 2)
	var n1, n2 uint64
	fmt.Sscanf(k1, "%x", &n1)
	fmt.Sscanf(k2, "%x", &n2)
	legacy := fmt.Sprintf(`{"id":"a","latest":2,"sha256":%q,"labels":{"stable":1},"versions":[{"n":1,"key":%d,"bytes":3,"at":1},{"n":2,"key":%d,"bytes":3,"at":2}]}`, sumOf("two"), n1, n2)
	if _, err := st.Set("skills.history", "a", json.RawMessage(legacy)); err != nil {
		t.Fatal(err)
	}
	shared := New(sharedStore{kv.Local(st)}, Config{Scope: "skills", Noun: "skill"})
	v, created, err := shared.Record("a", "three", Meta{}, nil)
	if err != nil || !created || v.Version != 3 {
		t.Fatalf("%+v %v %v", v, created, err)
	}
	raw, _, _ := st.Get("skills.history", "a")
	if strings.Contains(string(raw), `"versions"`) || !strings.Contains(string(raw), `"v1"`) {
		t.Fatalf("head not converted: %s", raw)
	}
	if c, p, err := shared.Select("a", "stable"); err != nil || c != "one" || p.Version != 1 {
		t.Fatalf("stable after conversion: %q %+v %v", c, p, err)
	}
	if _, p, err := shared.Select("a", "sha256:"+sumOf("one")); err != nil || p.Version != 1 {
		t.Fatalf("a digest the legacy head did not record: %+v %v", p, err)
	}
}

// A version another instance recorded a moment ago is in the head in
// state before this instance's summaries hear of it: HasStoredContent
// sees it (a served row caught between two nodes' registers must not be
// recorded again), HasContent only after a refresh.
func TestHasStoredContentSeesAnotherInstancesVersion(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	cfg := Config{Scope: "skills", Noun: "skill", Retain: 1000}
	a, b := New(sharedStore{kv.Local(st)}, cfg), New(sharedStore{kv.Local(st)}, cfg)
	if _, _, err := b.Record("x", "first", Meta{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Record("x", "second", Meta{}, nil); err != nil {
		t.Fatal(err)
	}
	if b.HasContent("x", "second") {
		t.Fatal("b's summaries know a's version already: the test shows nothing")
	}
	for body, want := range map[string]bool{"first": true, "second": true, "third": false} {
		if got, err := b.HasStoredContent("x", body); err != nil || got != want {
			t.Fatalf("b.HasStoredContent(%q) = %v, %v; want %v", body, got, err, want)
		}
	}
	if got, err := b.HasStoredContent("y", "first"); err != nil || got {
		t.Fatalf("an id without history: %v, %v", got, err)
	}
}
