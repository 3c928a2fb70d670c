package app

import (
	"log/slog"
	"net/http"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/httpguard"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/scope"
	"github.com/iii-skills/skills/server/internal/web"
)

// webSource is what this process's web page shows: its registry (and the
// registry's catalog) and its skills folders (nil: none), all read
// in-process; nil as a whole: no page, as in `skills mcp`.
type webSource struct {
	reg     *core.Local
	folders web.Folders
	// adminToken is the registry's --admin-token, given to the page only
	// with --web-admin-labels (docs/web.md).
	adminToken string
	// actionTokens names who acts on the page's actions: the registry's
	// admin token, the teams' engine tokens (nil: neither is set).
	actionTokens func(string) (web.Actor, bool)
	// publicOrigin is the origin of --public-url (empty: none).
	publicOrigin string
	// obsv is the server's observability: the page's metrics and traces,
	// its usage views and webhook dead letters (nil: none).
	obsv *observability
}

// webPage builds the web page for the HTTP listener (nil when there is no
// registry in this process). Only the engine's own listings (workers)
// go through client.
func webPage(src *webSource, client *iii.Client, log *slog.Logger) func(httpguard.Policy) (http.Handler, func()) {
	if src == nil {
		return nil
	}
	return func(guard httpguard.Policy) (http.Handler, func()) {
		reg := src.reg
		opts := web.Options{Catalog: reg.Catalog(), Registry: reg, Folders: src.folders, Engine: client,
			Searcher: web.RegistrySearcher{Registry: reg}, Guard: guard, TokenSetting: "--mcp-token", Logger: log,
			AdminToken: src.adminToken, ActionTokens: src.actionTokens, PublicOrigin: src.publicOrigin, VersionChanges: reg.SubscribeVersions, ServeLabel: reg.ServeLabel(),
			ProtectedLabels: reg.ProtectedLabels(), Publishers: reg}
		if o := src.obsv; o != nil {
			opts.Observer, opts.Usage, opts.Webhooks = o.obs, o.usageSource(), o.webhookAdmin()
		}
		page := web.New(opts)
		if src.obsv != nil {
			src.obsv.connections(kindWebStream, page.StreamCount)
		}
		return page, page.Close
	}
}

// actionTokens is web.Options.ActionTokens for the registry's admin token,
// the teams of engine_tokens and, without teams, the listener's token (nil
// when there is none of them).
func actionTokens(adminToken, listenerToken, pageAdminToken string, scoped []engine.ScopedToken) func(string) (web.Actor, bool) {
	if adminToken == "" && listenerToken == "" && len(scoped) == 0 {
		return nil
	}
	teams := make([]web.Team, len(scoped))
	for i, t := range scoped {
		var others [][]string
		for j, o := range scoped {
			if j != i {
				others = append(others, o.Namespaces)
			}
		}
		teams[i] = web.Team{Name: t.Name, Token: t.Token, Namespaces: t.Namespaces, Nested: scope.Nested(t.Namespaces, others)}
	}
	return web.ActionTokens(adminToken, teams, listenerToken, pageAdminToken)
}

// folderPrompts serves the directory's folder prompts to MCP.
type folderPrompts struct{ dir *directory.Directory }

func (f folderPrompts) List() []skillsmcp.FolderPrompt {
	rows := f.dir.FolderPrompts()
	out := make([]skillsmcp.FolderPrompt, len(rows))
	for i, p := range rows {
		out[i] = skillsmcp.FolderPrompt{Name: p.Name, Description: p.Description}
	}
	return out
}

func (f folderPrompts) Get(name string) (skillsmcp.FolderPrompt, error) {
	p, err := f.dir.FolderPromptNamed(name)
	return skillsmcp.FolderPrompt{Name: p.Name, Description: p.Description, Body: p.Body}, err
}

func (f folderPrompts) Subscribe(changed func()) func() { return f.dir.SubscribePrompts(changed) }
