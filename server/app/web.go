package app

import (
	"log/slog"
	"net/http"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/httpguard"
	"github.com/iii-skills/skills/server/web"
)

// webPage builds the web page of cat for the HTTP listener (nil when there
// is no catalog in this process, as in `skills mcp`). Its iii calls go
// through client, like any other client's.
func webPage(cat *catalog.Catalog, client *iii.Client, log *slog.Logger) func(httpguard.Policy) (http.Handler, func()) {
	if cat == nil {
		return nil
	}
	return func(guard httpguard.Policy) (http.Handler, func()) {
		page := web.New(web.Options{Catalog: cat, Caller: client, Searcher: web.FunctionSearcher{Caller: client},
			Guard: guard, TokenSetting: "--mcp-token", Logger: log})
		return page, page.Close
	}
}
