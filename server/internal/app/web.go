package app

import (
	"log/slog"
	"net/http"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/httpguard"
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
			AdminToken: src.adminToken, PublicOrigin: src.publicOrigin, VersionChanges: reg.SubscribeVersions, ServeLabel: reg.ServeLabel(),
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
