package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/fsource"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tool exposure and section reads, from an MCP client's side: the official go-sdk
// client over Streamable HTTP on a loopback socket, against the registry,
// the iii-directory surface on a skills folder and a publisher, all on an
// embedded engine.

// withDirectory serves folder through the iii-directory functions on a
// worker of their own (download_hosts empty, as by default).
func (s *stack) withDirectory(folder string) {
	t := s.t
	t.Helper()
	set, err := fsource.Open(fsource.Options{Folders: []string{folder}, Catalog: catalog.New(), Logger: quiet(), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	cli := iii.RegisterWorker(s.url, iii.WithName("iii-directory"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = cli.Close() })
	dir := directory.New(cli, set, nil, directory.DefaultConfig(), directory.Options{Logger: quiet()})
	if err := dir.Register(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dir.Close)
	connect(t, cli)
	// Every directory function the tests look for as a tool, so the MCP
	// server started next lists them all (they register one by one).
	for _, id := range []string{directory.FnSkillsDownload, "directory::registry::workers::list", "directory::registry::workers::info"} {
		testutil.Eventually(t, 5*time.Second, id+" registered", func() bool {
			out, err := s.pub.Trigger(s.ctx, iii.TriggerRequest{FunctionID: "engine::functions::info",
				Data: json.RawMessage(`{"function_id":"` + id + `"}`)})
			return err == nil && strings.Contains(string(out), id)
		})
	}
}

// dialTarget is a loopback listener standing in for the host an attacker
// names; dials reports how many connections reached it before the call
// (its own sentinel connection is accepted after every earlier one).
type dialTarget struct {
	ln       net.Listener
	accepted chan string
}

func newDialTarget(t *testing.T) *dialTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dialTarget{ln: ln, accepted: make(chan string, 1024)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.accepted <- c.RemoteAddr().String()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return d
}

func (d *dialTarget) dials(t *testing.T) int {
	t.Helper()
	c, err := net.Dial("tcp", d.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	mine := c.LocalAddr().String()
	_ = c.Close()
	n := 0
	for remote := range d.accepted {
		if remote == mine {
			return n
		}
		n++
	}
	return n
}

// trustStack is the stack with a folder holding a skill, the directory,
// an undeclared publisher function (it counts its calls) and the MCP
// server with opts, connected over HTTP.
func trustStack(t *testing.T, opts skillsmcp.Options) (*stack, *sdk.ClientSession, string, *atomic.Int64) {
	s := newStack(t)
	s.seed()
	folder := t.TempDir()
	if err := os.MkdirAll(filepath.Join(folder, "victim"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "victim", "SKILL.md"), []byte("---\nname: victim\ndescription: kept\n---\n# Kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.withDirectory(folder)
	var calls atomic.Int64
	s.function("ops::purge", func(context.Context, json.RawMessage) (any, error) { calls.Add(1); return "purged", nil },
		iii.RegisterFunctionOptions{Description: "Deletes everything (declares nothing)"})
	s.startMCP(opts)
	cs := s.connectClient(&sdk.StreamableClientTransport{Endpoint: s.serveHTTP(skillsmcp.HTTPOptions{})}, v2025, nil)
	return s, cs, folder, &calls
}

func toolsByName(t *testing.T, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tl.Name] = tl
	}
	return out
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text(res.Content[0]), res.IsError
}

// TestMCPSideEffectToolsNeedOptIn is the download-hosts attack over MCP: by default the
// download tool (and every other tool with side effects: the registry
// proxy that dials out, a publisher function that declares nothing) is
// neither listed nor callable, and a call says which setting allows it;
// the target host is never dialed and the folder keeps its skill. With
// the opt-in the tools are listed with annotations that say what they do,
// and the download still dials only download_hosts (empty: refused).
func TestMCPSideEffectToolsNeedOptIn(t *testing.T) {
	target := newDialTarget(t)
	attack := map[string]any{"repo": "https://" + target.ln.Addr().String() + "/r.git", "skill": "victim"}

	t.Run("default: read-only tools only", func(t *testing.T) {
		_, cs, folder, calls := trustStack(t, skillsmcp.Options{})
		tools := toolsByName(t, cs)
		for _, name := range []string{"directory__skills__download", "directory__registry__workers__list", "directory__registry__workers__info", "ops__purge"} {
			if tools[name] != nil {
				t.Errorf("%s listed by default", name)
			}
		}
		for _, name := range []string{"skill__fetch", "directory__skills__fetch-skill", "directory__skills__list", "directory__engine__workers__list", "demo__echo"} {
			tl := tools[name]
			if tl == nil {
				t.Errorf("read-only tool %s not listed", name)
				continue
			}
			if a := tl.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Errorf("%s annotations = %+v, want readOnlyHint, openWorldHint false", name, a)
			}
		}
		for _, name := range []string{"directory__skills__download", "ops__purge"} {
			got, isErr := callText(t, cs, name, attack)
			if !isErr || !strings.Contains(got, "has side effects") || !strings.Contains(got, "--mcp-allow-side-effects") {
				t.Errorf("%s by default: %q (isError %v)", name, got, isErr)
			}
		}
		// Nor through a section read.
		_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "iii://fn/directory/skills/download"})
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "has side effects") {
			t.Errorf("section read of the download: %v", err)
		}
		if calls.Load() != 0 {
			t.Errorf("the undeclared function ran %d times", calls.Load())
		}
		if b, err := os.ReadFile(filepath.Join(folder, "victim", "SKILL.md")); err != nil || !strings.Contains(string(b), "# Kept") {
			t.Errorf("folder skill after the attack: %q %v", b, err)
		}
	})

	t.Run("opted in: annotated, downloads still limited to download_hosts", func(t *testing.T) {
		_, cs, folder, calls := trustStack(t, skillsmcp.Options{AllowSideEffects: true})
		tools := toolsByName(t, cs)
		dl := tools["directory__skills__download"]
		if dl == nil || dl.Annotations == nil || dl.Annotations.ReadOnlyHint || dl.Annotations.DestructiveHint == nil ||
			!*dl.Annotations.DestructiveHint || dl.Annotations.OpenWorldHint == nil || !*dl.Annotations.OpenWorldHint {
			t.Fatalf("download tool when allowed: %+v", dl)
		}
		if rl := tools["directory__registry__workers__list"]; rl == nil || !rl.Annotations.ReadOnlyHint || !*rl.Annotations.OpenWorldHint {
			t.Errorf("registry list when allowed: %+v", rl)
		}
		if p := tools["ops__purge"]; p == nil || p.Annotations.ReadOnlyHint || !*p.Annotations.DestructiveHint {
			t.Errorf("undeclared function when allowed: %+v", p)
		}
		got, isErr := callText(t, cs, "directory__skills__download", attack)
		if !isErr || !strings.Contains(got, "downloads are off: download_hosts in config.yaml lists no host") {
			t.Errorf("download with no download_hosts: %q", got)
		}
		if got, isErr := callText(t, cs, "ops__purge", map[string]any{}); isErr || got != "purged" || calls.Load() != 1 {
			t.Errorf("allowed undeclared function: %q %v", got, isErr)
		}
		if b, err := os.ReadFile(filepath.Join(folder, "victim", "SKILL.md")); err != nil || !strings.Contains(string(b), "# Kept") {
			t.Errorf("folder skill after the attack: %q %v", b, err)
		}
	})
	if n := target.dials(t); n != 0 {
		t.Fatalf("the attacker's host was dialed %d times", n)
	}
}

// TestMCPHiddenSectionsRefused: section URIs that resolve to
// hidden namespaces (state::, skills::, engine::) are refused on every MCP
// path that reads sections: the fetch-skill tool (full URIs, bare paths,
// inside uris), skill__fetch and resources/read. Sections of visible
// functions still read, and nothing stored changes.
func TestMCPHiddenSectionsRefused(t *testing.T) {
	s, cs, _, _ := trustStack(t, skillsmcp.Options{})
	hidden := map[string]string{
		"iii://fn/state/list_groups":   "state::list_groups",
		"fn/state/list_groups":         "state::list_groups",
		"iii://fn/skills/catalog-list": "skills::catalog-list",
		"iii://fn/engine/workers/list": "engine::workers::list",
		" iii://fn/state/get ":         "state::get",
	}
	for uri, fid := range hidden {
		want := "Function '" + fid + "' is in an internal namespace and cannot back a skill resource"
		for _, args := range []map[string]any{{"uri": uri}, {"uris": []string{"iii://fn/demo/echo", uri}}} {
			for _, tool := range []string{"directory__skills__fetch-skill", "skill__fetch"} {
				got, isErr := callText(t, cs, tool, args)
				if !isErr || !strings.Contains(got, want) {
					t.Errorf("%s %v: %q (isError %v)", tool, args, got, isErr)
				}
			}
		}
		if strings.HasPrefix(uri, "iii://") {
			_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
			if rpcCode(err) != -32602 || !strings.Contains(err.Error(), want) {
				t.Errorf("resources/read %s: %v", uri, err)
			}
		}
	}
	// A visible section still reads, through each path.
	if got, isErr := callText(t, cs, "directory__skills__fetch-skill", map[string]any{"uri": "fn/demo/echo"}); isErr || !strings.Contains(got, "rendered by demo::echo") {
		t.Errorf("visible section through fetch-skill: %q", got)
	}
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "iii://fn/demo/echo"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "rendered by demo::echo") {
		t.Errorf("visible section through resources/read: %v", err)
	}
	// What is stored is intact.
	if got := string(s.trigger("skill::fetch", map[string]string{"uri": "iii://demo"})); !strings.Contains(got, "Demo skill") {
		t.Errorf("stored skill after the attacks: %s", got)
	}
}
