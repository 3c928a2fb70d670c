package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRemoteListingInPages: `skills mcp` reads a catalog whose listing
// the registry answers in several pieces (one skill per answer here): every
// skill is in resources/list and in the skill:// mirror, so removing the
// last one still sends resources/updated for its SKILL.md.
func TestRemoteListingInPages(t *testing.T) {
	s := newStack(t)
	const n = 5
	for i := range n {
		s.registerSkill(fmt.Sprintf("paged-%d", i), fmt.Sprintf("# Paged %d\n\nSkill number %d.\n", i, i))
	}
	s.remote, s.pageBytes = true, 1
	s.startMCP(skillsmcp.Options{})
	nt := &notes{}
	cs := s.connectInMemory(v2026, nt)

	listed := map[string]bool{}
	for r, err := range cs.Resources(s.ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[r.URI] = true
	}
	for i := range n {
		if uri := fmt.Sprintf("skill://paged-%d/SKILL.md", i); !listed[uri] {
			t.Fatalf("resources/list lacks %s (listing read in pages): %v", uri, listed)
		}
	}

	last := fmt.Sprintf("skill://paged-%d/SKILL.md", n-1)
	if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: last}); err != nil {
		t.Fatal(err)
	}
	// The catalog watch binds its trigger in the background: wait until a
	// change of another skill comes through it, so the removal below is
	// seen (paged-4 itself stays as the paged listing mirrored it).
	const probe = "skill://probe/SKILL.md"
	if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: probe}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the catalog watch to deliver a change", func() bool {
		s.registerSkill("probe", "# Probe\n\n"+time.Now().Format(time.RFC3339Nano)+"\n")
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if nt.has(resourceUpdated, probe) {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	})
	s.trigger("skills::unregister", map[string]string{"id": fmt.Sprintf("paged-%d", n-1)})
	testutil.Eventually(t, 5*time.Second, "resources/updated for "+last+" (mirrored from a later page)", func() bool { return nt.has(resourceUpdated, last) })
	for r, err := range cs.Resources(s.ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.URI, last) {
			t.Fatalf("unregistered skill still listed: %s", r.URI)
		}
	}
}
