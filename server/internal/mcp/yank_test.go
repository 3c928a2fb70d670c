package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A yank and a deprecation reach MCP clients: resources/updated for the
// skill and list_changed, skills/list _meta carrying the version, digest,
// signer, yank and deprecation, and a pinned resources/read of a yanked
// version carrying its reason in _meta; a skill whose every version is
// yanked leaves resources/list.
func TestYankAndDeprecateReachMCPClients(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.registerSkill("kill/switch", "# One\n\nfirst\n")
	s.registerSkill("kill/switch", "# Two\n\nsecond\n")
	s.startMCP(skillsmcp.Options{SkillsExtension: true})
	n := &notes{}
	cs := s.connectInMemory(v2025, n)
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "iii://kill/switch"}); err != nil {
		t.Fatal(err)
	}
	meta := func() map[string]any {
		t.Helper()
		call := s.rawStream()
		if _, err := call("initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
			t.Fatal(err)
		}
		raw, rerr := call("skills/get", map[string]any{"uri": "skill://kill/switch/SKILL.md"})
		if rerr != nil {
			t.Fatal(rerr)
		}
		var r struct {
			Skill struct {
				Meta map[string]any `json:"_meta"`
			} `json:"skill"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r.Skill.Meta
	}
	sum := func(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }
	m := meta()
	if m[skillsmcp.MetaKeyVersion] != float64(2) || m[skillsmcp.MetaKeySHA256] != sum("# Two\n\nsecond\n") || m[skillsmcp.MetaKeySignedBy] != nil {
		t.Fatalf("_meta before the yank: %v", m)
	}
	if _, present := m[skillsmcp.MetaKeySignedBy]; !present {
		t.Fatalf("_meta of a published skill lacks signed_by (null when unsigned): %v", m)
	}

	before := n.count(resourcesChanged)
	s.trigger("skills::yank", map[string]any{"id": "kill/switch", "version": 2, "reason": "dangerous advice"})
	testutil.Eventually(t, 5*time.Second, "resources/updated and list_changed after skills::yank", func() bool {
		return n.has(resourceUpdated, "iii://kill/switch") && n.count(resourcesChanged) > before
	})
	testutil.Eventually(t, 5*time.Second, "skills/get to describe version 1", func() bool {
		m = meta()
		return m[skillsmcp.MetaKeyVersion] == float64(1)
	})
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://kill/switch@2"})
	if err != nil || res.Contents[0].Text != "# Two\n\nsecond\n" || res.Contents[0].Meta[skillsmcp.MetaKeyYanked] != "dangerous advice" {
		t.Fatalf("pinned read of the yanked version: %v %+v", err, res)
	}
	res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://kill/switch"})
	if err != nil || res.Contents[0].Text != "# One\n\nfirst\n" || res.Contents[0].Meta != nil {
		t.Fatalf("unselected read after the yank: %v %+v", err, res)
	}

	before = n.count(resourcesChanged)
	s.trigger("skills::deprecate", map[string]any{"id": "kill/switch", "message": "use kill/other"})
	testutil.Eventually(t, 5*time.Second, "skills/get to carry the deprecation", func() bool {
		return meta()[skillsmcp.MetaKeyDeprecated] == "use kill/other"
	})
	testutil.Eventually(t, 5*time.Second, "list_changed after skills::deprecate", func() bool { return n.count(resourcesChanged) > before })

	s.trigger("skills::yank", map[string]any{"id": "kill/switch", "version": 1, "reason": "all gone"})
	testutil.Eventually(t, 5*time.Second, "the withdrawn skill to leave resources/list", func() bool {
		list, err := cs.ListResources(ctx, nil)
		return err == nil && !strings.Contains(mustJSON(list), "iii://kill/switch")
	})
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://kill/switch"}); err == nil || !strings.Contains(err.Error(), "yanked") {
		t.Fatalf("read of a withdrawn skill: %v", err)
	}
}
