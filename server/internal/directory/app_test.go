package directory_test

import (
	"context"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/directory"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSeesFolderChanges: a file created in a watched folder reaches an
// MCP client as notifications/resources/list_changed, and the skill is
// listed and readable over MCP, through the whole server as
// `skills --standalone --skills-folder … --mcp-addr …` runs it.
func TestMCPSeesFolderChanges(t *testing.T) {
	root := directory.AgentFolder(t)
	cfg := appstack.Config(t)
	cfg.Directory.SkillsFolder = app.FolderList{root}
	cfg.HTTP.Addr = "127.0.0.1:0"
	srv := appstack.Start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 64)
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.HTTPURL + skillsmcp.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	directory.Put(t, root, "mcp/new.md", "# New over MCP\n")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/list_changed")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range res.Resources {
			found = found || r.URI == "iii://mcp/new"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("iii://mcp/new not listed over MCP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://mcp/new"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "# New over MCP\n" {
		t.Fatalf("read over MCP: %v %+v", err, rr)
	}
}
