package skillsprotocol_test

import (
	"context"
	"errors"
	"os"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

// sharingRuntime is a runtime over its own memory store that shares its
// bundles through shared (engine state, as instances on one Redis do).
func sharingRuntime(t *testing.T, shared kv.Store) (*sp.Runtime, *catalog.Catalog) {
	t.Helper()
	own := store.OpenMemory()
	t.Cleanup(func() { _ = own.Close() })
	work, err := os.MkdirTemp("", "sp-work-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	cat := catalog.New()
	rt, err := sp.New(sp.Options{Catalog: cat, State: kv.Local(own), Logger: quiet(), WorkDir: work, AdminToken: "admin-0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	rt.ShareBundles(shared, nil)
	return rt, cat
}

// toolBundle is version of the action bundle acme.tools.hello.
func toolBundle(version string) sp.PublishRequest {
	return sp.PublishRequest{Files: []sp.BundleFile{
		{Path: "skill.toml", Content: "name = \"acme.tools.hello\"\nversion = \"" + version + "\"\ndescription = \"Say hello\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n"},
		{Path: "SKILL.md", Content: "# Hello\n"},
		{Path: "code/main.py", Content: "def main(args):\n    return 'hello'\n"},
	}}
}

// Unpublishing removes the shared copy too: no instance copies the
// version again, the unpublishing one at its next re-list included. A
// publisher the engine does not name is nobody: only the admin token
// unpublishes its bundles.
func TestUnpublishRemovesTheSharedCopy(t *testing.T) {
	ctx := context.Background()
	sharedStore := store.OpenMemory()
	t.Cleanup(func() { _ = sharedStore.Close() })
	shared := kv.Local(sharedStore)
	a, aCat := sharingRuntime(t, shared)
	b, bCat := sharingRuntime(t, shared)
	if _, err := a.Publish(ctx, toolBundle("0.1.0")); err != nil {
		t.Fatal(err)
	}
	if err := b.RelistSharedBundles(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := a.Unpublish(ctx, sp.UnpublishRequest{Name: "acme.tools.hello"})
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != "FORBIDDEN" {
		t.Fatalf("unpublishing without a publisher or the admin token: %v", err)
	}
	out, err := a.Unpublish(ctx, sp.UnpublishRequest{Name: "acme.tools.hello", Version: "0.1.0", AdminToken: "admin-0123456789abcdef"})
	if err != nil || len(out.Versions) != 1 {
		t.Fatalf("unpublish with the admin token: %+v %v", out, err)
	}
	if err := a.RelistSharedBundles(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := aCat.GetVersion("acme/tools/hello", "0.1.0"); ok {
		t.Fatal("the unpublished version came back from the shared copy")
	}
	if n, _ := a.PublishedStats(); n != 0 {
		t.Fatalf("%d bundles counted after the unpublish", n)
	}
	if raw, ok, err := shared.Get(ctx, sp.SharedBundleScope, "acme.tools.hello@0.1.0"); err != nil || ok {
		t.Fatalf("the shared copy is still there: %s %v", raw, err)
	}
	// b copied it before: it keeps its own until unpublished there.
	if _, ok := bCat.GetVersion("acme/tools/hello", "0.1.0"); !ok {
		t.Fatal("b lost its own copy")
	}
	if _, err := b.Unpublish(ctx, sp.UnpublishRequest{Name: "acme.tools.hello", AdminToken: "admin-0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := bCat.GetVersion("acme/tools/hello", "0.1.0"); ok {
		t.Fatal("b serves the version after unpublishing it")
	}
}
