package skillsprotocol_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

// instance is one registry instance's Skills Protocol runtime: its own
// store and catalog, sharing bundles through shared (engine state).
type instance struct {
	rt  *sp.Runtime
	cat *catalog.Catalog
	own *store.Store
}

// newInstance starts a runtime over its own memory store; announce is
// what its publishes call (delivering to the other instances, or not).
func newInstance(t *testing.T, shared kv.Store, announce func(ctx context.Context, key string), opts sp.Options) *instance {
	t.Helper()
	own := store.OpenMemory()
	t.Cleanup(func() { _ = own.Close() })
	work, err := os.MkdirTemp("", "sp-work-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	cat := catalog.New()
	opts.Catalog, opts.State, opts.Logger, opts.WorkDir = cat, kv.Local(own), quiet(), work
	rt, err := sp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	rt.ShareBundles(shared, announce)
	return &instance{rt: rt, cat: cat, own: own}
}

func helloBundle(version, marker string) sp.PublishRequest {
	files := map[string]string{
		"skill.toml":   "name = \"acme.tools.hello\"\nversion = \"" + version + "\"\ndescription = \"Say hello\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n",
		"SKILL.md":     "# Hello\n",
		"code/main.py": "def main(args):\n    return '" + marker + "'\n",
	}
	var req sp.PublishRequest
	for p, c := range files {
		req.Files = append(req.Files, sp.BundleFile{Path: p, Content: c})
	}
	return req
}

// codeOf is code/main.py of acme.tools.hello@version as inst serves it
// ("" when it serves no such version).
func codeOf(t *testing.T, inst *instance, version string) string {
	t.Helper()
	e, ok := inst.cat.GetVersion("acme/tools/hello", version)
	if !ok {
		return ""
	}
	for _, f := range e.Files {
		if f.Path == "code/main.py" {
			b, err := f.Content.Bytes()
			if err != nil {
				t.Fatalf("read code/main.py of %s: %v", version, err)
			}
			return string(b)
		}
	}
	t.Fatalf("%s has no code/main.py", version)
	return ""
}

// Bundles published through one registry instance are served by the
// others, from their own checked copies: announced, or found by a re-list
// when the announcement was lost; a shared copy changed before an instance
// copied it is refused, and one changed after is ignored.
func TestPublishedBundlesReachOtherInstances(t *testing.T) {
	ctx := context.Background()
	sharedStore := store.OpenMemory()
	t.Cleanup(func() { _ = sharedStore.Close() })
	shared := kv.Local(sharedStore) // engine state, as real engines on one Redis share it

	var b *instance
	deliver := true
	a := newInstance(t, shared, func(ctx context.Context, key string) {
		if deliver {
			if err := b.rt.ApplySharedBundle(ctx, key); err != nil {
				t.Errorf("b applies %s: %v", key, err)
			}
		}
	}, sp.Options{})
	b = newInstance(t, shared, nil, sp.Options{})

	if _, err := a.rt.Publish(ctx, helloBundle("0.1.0", "one")); err != nil {
		t.Fatal(err)
	}
	if got := codeOf(t, b, "0.1.0"); !strings.Contains(got, "one") {
		t.Fatalf("b serves 0.1.0 as %q; want the code published through a", got)
	}

	t.Run("a lost announcement is repaired by a re-list", func(t *testing.T) {
		deliver = false
		defer func() { deliver = true }()
		if _, err := a.rt.Publish(ctx, helloBundle("0.2.0", "two")); err != nil {
			t.Fatal(err)
		}
		if got := codeOf(t, b, "0.2.0"); got != "" {
			t.Fatalf("b serves 0.2.0 before any message or re-list: %q", got)
		}
		if err := b.rt.RelistSharedBundles(ctx); err != nil {
			t.Fatal(err)
		}
		if got := codeOf(t, b, "0.2.0"); !strings.Contains(got, "two") {
			t.Fatalf("b serves 0.2.0 as %q after a re-list", got)
		}
	})

	evil := func(s string) json.RawMessage {
		raw, _ := json.Marshal(base64.StdEncoding.EncodeToString([]byte(s)))
		return raw
	}
	t.Run("a shared copy changed after b copied it changes nothing on b", func(t *testing.T) {
		// Files are stored in path order: SKILL.md #0, code/main.py #1, skill.toml #2.
		if _, err := sharedStore.Set(sp.SharedBundleScope+"-files", "acme.tools.hello@0.1.0#1", evil("def main(args):\n    return 'tampered'\n")); err != nil {
			t.Fatal(err)
		}
		if err := b.rt.ApplySharedBundle(ctx, "acme.tools.hello@0.1.0"); err != nil {
			t.Fatal(err)
		}
		if got := codeOf(t, b, "0.1.0"); !strings.Contains(got, "one") {
			t.Fatalf("b serves 0.1.0 as %q after the shared copy was changed", got)
		}
	})

	t.Run("a shared copy changed before an instance copies it is refused", func(t *testing.T) {
		c := newInstance(t, shared, nil, sp.Options{})
		err := c.rt.ApplySharedBundle(ctx, "acme.tools.hello@0.1.0")
		if err == nil || !strings.Contains(err.Error(), "does not match the sha256 recorded at publish") {
			t.Fatalf("copying a changed shared bundle: %v", err)
		}
		if got := codeOf(t, c, "0.1.0"); got != "" {
			t.Fatalf("c serves the changed bundle: %q", got)
		}
		// The untouched version is copied by the same re-list.
		if err := c.rt.RelistSharedBundles(ctx); err != nil {
			t.Fatal(err)
		}
		if got := codeOf(t, c, "0.2.0"); !strings.Contains(got, "two") {
			t.Fatalf("c serves 0.2.0 as %q after a re-list", got)
		}
		if got := codeOf(t, c, "0.1.0"); got != "" {
			t.Fatalf("c serves the changed 0.1.0 after a re-list: %q", got)
		}
	})

	t.Run("a shared record whose files name another version is refused", func(t *testing.T) {
		raw, ok, err := sharedStore.Get(sp.SharedBundleScope, "acme.tools.hello@0.2.0")
		if err != nil || !ok {
			t.Fatalf("shared record of 0.2.0: %v %v", ok, err)
		}
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		rec["version"] = "9.9.9"
		forged, _ := json.Marshal(rec)
		if _, err := sharedStore.Set(sp.SharedBundleScope, "acme.tools.hello@9.9.9", forged); err != nil {
			t.Fatal(err)
		}
		for i := range rec["files"].([]any) {
			f, _, _ := sharedStore.Get(sp.SharedBundleScope+"-files", "acme.tools.hello@0.2.0#"+strconv.Itoa(i))
			if _, err := sharedStore.Set(sp.SharedBundleScope+"-files", "acme.tools.hello@9.9.9#"+strconv.Itoa(i), f); err != nil {
				t.Fatal(err)
			}
		}
		e := newInstance(t, shared, nil, sp.Options{})
		err = e.rt.ApplySharedBundle(ctx, "acme.tools.hello@9.9.9")
		if err == nil || !strings.Contains(err.Error(), "its skill.toml names acme.tools.hello@0.2.0") {
			t.Fatalf("copying a record that names another version: %v", err)
		}
		if n, _ := e.rt.PublishedStats(); n != 0 {
			t.Fatalf("e holds %d bundle versions; want none", n)
		}
		if _, _, err := sharedStore.Delete(sp.SharedBundleScope, "acme.tools.hello@9.9.9"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("each instance applies its own caps", func(t *testing.T) {
		// Two good shared versions now (0.2.0, 0.3.0; 0.1.0's copy was changed).
		if _, err := a.rt.Publish(ctx, helloBundle("0.3.0", "three")); err != nil {
			t.Fatal(err)
		}
		d := newInstance(t, shared, nil, sp.Options{MaxPublishedBundles: 1})
		if err := d.rt.RelistSharedBundles(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := d.rt.PublishedStats(); n != 1 {
			t.Fatalf("d holds %d bundle versions; its cap is 1", n)
		}
	})

	t.Run("a copy survives the instance's restart from its own store", func(t *testing.T) {
		if err := b.rt.LoadPublished(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := b.rt.PublishedStats(); n != 3 {
			t.Fatalf("b holds %d bundle versions after a reload; want 3", n)
		}
	})
}
