package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSkillURIVersions: skill://<id>@<version>/SKILL.md reads a registry
// version of a published skill (skills/get and resources/read, digest
// matching the bytes), is never listed, keeps the id's last segment as
// the frontmatter name, and an unknown version, a folder skill or a
// reader-less view answer -32602.
func TestSkillURIVersions(t *testing.T) {
	s := newStack(t)
	s.seed()
	fx := newSkillsFixture(t)
	view := skillsext.NewView(fx.cat)
	t.Cleanup(view.Close)
	old := "# Plain\n\nThe first body.\n"
	view.SetVersions(func(id, sel string) (string, skillsext.Facts, bool) {
		return old, skillsext.Facts{Version: 1}, id == "plain" && (sel == "1" || sel == "production")
	})
	s.startMCPView(view, skillsmcp.Options{})
	call := s.rawStream()
	if _, err := call("initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.mcp.SDK().Connect(s.ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs := s.connectClient(ct, v2026, nil)
	ctx := context.Background()

	for _, sel := range []string{"1", "production"} {
		uri := "skill://plain@" + sel + "/SKILL.md"
		raw, rerr := call("skills/get", map[string]any{"uri": uri})
		if rerr != nil {
			t.Fatalf("skills/get %s: %v", uri, rerr)
		}
		var got struct {
			Skill wireSkill `json:"skill"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		files := got.Skill.files(t)
		if got.Skill.URI != uri || got.Skill.Frontmatter["name"] != "plain" || len(files) != 1 || files[0].URI != uri {
			t.Fatalf("skills/get %s = %s", uri, raw)
		}
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		text := rr.Contents[0].Text
		sum := sha256.Sum256([]byte(text))
		if !strings.HasPrefix(text, "---\nname: plain\n") || !strings.HasSuffix(text, old) || "sha256:"+hex.EncodeToString(sum[:]) != files[0].Digest {
			t.Fatalf("resources/read %s = %q (digest %s, listed %s)", uri, text, hex.EncodeToString(sum[:]), files[0].Digest)
		}
	}
	// The served content is unchanged, and no version is listed.
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://plain/SKILL.md"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "A static skill.") {
		t.Fatalf("skill://plain/SKILL.md = %v, %v", rr, err)
	}
	raw, rerr := call("skills/list", map[string]any{})
	if rerr != nil || strings.Contains(string(raw), "@") {
		t.Fatalf("skills/list lists a version: %s %v", raw, rerr)
	}
	for _, uri := range []string{"skill://plain@7/SKILL.md", "skill://plain@/SKILL.md", "skill://acme/pdf-tools@1/SKILL.md", "skill://nope@1/SKILL.md"} {
		if _, rerr := call("skills/get", map[string]any{"uri": uri}); rerr == nil || rerr.Code != -32602 {
			t.Errorf("skills/get %s: %v, want -32602", uri, rerr)
		}
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); rpcCode(err) != -32602 {
			t.Errorf("resources/read %s: %v, want -32602", uri, err)
		}
	}
}
