package app

import (
	"log/slog"
	"net/http"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/web"
	"github.com/iii-skills/skills/server/internal/worker"
)

// webSource is what this process's web page shows: its catalog and the
// registry worker whose versions and labels it follows (nil: no page, as
// in `skills mcp`).
type webSource struct {
	cat *catalog.Catalog
	w   *worker.Worker
	// adminToken is the registry's --admin-token, given to the page only
	// with --web-admin-labels (docs/web.md).
	adminToken string
	// publicOrigin is the origin of --public-url (empty: none).
	publicOrigin string
}

// webPage builds the web page for the HTTP listener (nil when there is no
// catalog in this process). Its iii calls go through client, like any
// other client's.
func webPage(src *webSource, client *iii.Client, log *slog.Logger) func(httpguard.Policy) (http.Handler, func()) {
	if src == nil || src.cat == nil {
		return nil
	}
	return func(guard httpguard.Policy) (http.Handler, func()) {
		opts := web.Options{Catalog: src.cat, Caller: client, Searcher: web.FunctionSearcher{Caller: client},
			Guard: guard, TokenSetting: "--mcp-token", Logger: log, AdminToken: src.adminToken, PublicOrigin: src.publicOrigin}
		if src.w != nil {
			opts.VersionChanges = src.w.SubscribeVersions
			opts.ServeLabel, opts.ProtectedLabels = src.w.ServeLabel(), src.w.ProtectedLabels()
			opts.Publishers = src.w
		}
		page := web.New(opts)
		return page, page.Close
	}
}
