package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/usage"
)

// UsageSource answers the usage views (*usage.Counter).
type UsageSource interface {
	Usage(ctx context.Context, q usage.Query) (usage.Report, error)
}

// usageWindow is the period the views look at: the last 30 days (the days
// a usage row keeps by default).
const usageWindow = 30

// Bounds of the usage views.
const (
	mostReadShown = 50  // skills in "most read"
	unreadShown   = 200 // skills in "not read in 30 days"
	chartClients  = 5   // clients a chart names; the rest are "other"
)

// addObservabilityRoutes adds the usage views and the webhook deliveries.
func (s *Server) addObservabilityRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /usage", s.authed(s.usagePage))
	mux.HandleFunc("GET /usage/chart/{id...}", s.authed(s.usageChart))
	mux.HandleFunc("GET /webhooks", s.authed(s.webhooksPage))
	mux.HandleFunc("POST /actions/resend-webhook", s.resendWebhook)
}

type usageRow struct {
	ID, Href, Title string
	Reads           uint64
	Clients         string // the most reading clients, "claude-code 30, cursor 8"
	LastRead        string
	LastReadISO     string
	Listed          bool // served by the catalog now
}

type usageData struct {
	Off       bool
	Error     string
	Since     string
	MostRead  []usageRow
	Unread    []usageRow
	UnreadAll int // skills not read in the window, shown or not
	Prompts   []usageRow
}

// since30 is the first day of the window.
func since30(now time.Time) time.Time {
	return now.UTC().AddDate(0, 0, -(usageWindow - 1)).Truncate(24 * time.Hour)
}

// usagePage is the catalog seen by its reads: the most read skills of the
// last 30 days, and the skills of the catalog nobody read in them.
func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) {
	d := usageData{}
	now := time.Now()
	from := since30(now)
	d.Since = from.Format(time.DateOnly)
	if s.opts.Usage == nil {
		d.Off = true
		s.render(w, r, http.StatusOK, "usage", &page{Title: "Usage", Nav: "usage", Data: d})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.CallTimeout)
	defer cancel()
	recent, err := s.opts.Usage.Usage(ctx, usage.Query{Since: from})
	var all usage.Report
	if err == nil {
		all, err = s.opts.Usage.Usage(ctx, usage.Query{})
	}
	if err != nil {
		d.Error = "the usage counts could not be read: " + err.Error()
		s.render(w, r, http.StatusOK, "usage", &page{Title: "Usage", Nav: "usage", Data: d})
		return
	}
	// Versions of one skill add up.
	type sum struct {
		reads   uint64
		clients map[string]uint64
		last    time.Time
	}
	sums := func(rep usage.Report) (map[string]*sum, []string) {
		out := map[string]*sum{}
		var order []string
		for _, u := range rep.Skills {
			t := out[u.ID]
			if t == nil {
				t = &sum{clients: map[string]uint64{}}
				out[u.ID] = t
				order = append(order, u.ID)
			}
			t.reads += u.Reads
			for c, n := range u.ByClient {
				t.clients[c] += n
			}
			t.last = later(t.last, u.LastReadAt)
		}
		return out, order
	}
	recentByID, order := sums(recent)
	allByID, _ := sums(all)
	slices.SortStableFunc(order, func(a, b string) int {
		switch ra, rb := recentByID[a].reads, recentByID[b].reads; {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return strings.Compare(a, b)
	})
	row := func(id string, t *sum, e *catalog.Entry) usageRow {
		ur := usageRow{ID: id, Title: id, LastRead: "never"}
		if e != nil {
			ur.Title, ur.Href, ur.Listed = e.DisplayTitle(), "/skill/"+id, true
		}
		if t != nil {
			ur.Reads, ur.Clients = t.reads, topClients(t.clients, 3)
			if !t.last.IsZero() {
				ur.LastRead, ur.LastReadISO = age(t.last, now), isoTime(t.last)
			}
		}
		return ur
	}
	for _, id := range order {
		e, _ := s.cat.Get(id)
		ur := row(id, recentByID[id], e)
		if strings.HasPrefix(id, "prompt:") {
			ur.Href = promptHref(strings.TrimPrefix(id, "prompt:"))
			d.Prompts = append(d.Prompts, ur)
			continue
		}
		if len(d.MostRead) < mostReadShown {
			d.MostRead = append(d.MostRead, ur)
		}
	}
	for _, e := range s.cat.List() {
		if e.Origin.Kind == catalog.OriginBuiltin || recentByID[e.ID] != nil {
			continue
		}
		d.UnreadAll++
		if len(d.Unread) < unreadShown {
			ur := row(e.ID, allByID[e.ID], e)
			ur.Reads = 0
			d.Unread = append(d.Unread, ur)
		}
	}
	s.render(w, r, http.StatusOK, "usage", &page{Title: "Usage", Nav: "usage", Data: d})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// byReads lists m's clients, the most reads first (then by name).
func byReads(m map[string]uint64) []string {
	names := make([]string, 0, len(m))
	for c := range m {
		names = append(names, c)
	}
	slices.SortFunc(names, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// topClients is "a 30, b 8" for the n clients with the most reads.
func topClients(m map[string]uint64, n int) string {
	names := byReads(m)
	parts := make([]string, 0, n)
	for i, c := range names {
		if i == n {
			parts = append(parts, fmt.Sprintf("%d more", len(names)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}

// chartPalette colours the clients of a chart (the last is "other").
var chartPalette = []string{"#2f6fdf", "#e0812b", "#2f9e5a", "#b03aa5", "#c9a227", "#888888"}

// usageChart draws a skill's reads per day of the last 30 days, by client,
// as an SVG the skill page shows in an img (no script, no outside asset:
// within the page's Content-Security-Policy).
func (s *Server) usageChart(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	now := time.Now()
	from := since30(now)
	var days []usage.DayUsage
	msg := ""
	if s.opts.Usage == nil {
		msg = "usage counting is off"
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.CallTimeout)
		rep, err := s.opts.Usage.Usage(ctx, usage.Query{ID: id, Since: from})
		cancel()
		if err != nil {
			msg = "usage could not be read"
		}
		for _, u := range rep.Skills {
			days = append(days, u.Days...)
		}
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write([]byte(chartSVG(days, from, msg)))
}

// chartSVG draws days (any versions, any order) over the usageWindow days
// from first: one bar per day, stacked by client, the chartClients most
// reading clients named and the rest as "other".
func chartSVG(days []usage.DayUsage, first time.Time, msg string) string {
	const width, height, top, bottom, left = 600, 190, 14, 124, 34
	perDay := make([]map[string]uint64, usageWindow)
	totals := map[string]uint64{}
	var total uint64
	for _, d := range days {
		t, err := time.Parse(time.DateOnly, d.Date)
		if err != nil {
			continue
		}
		i := int(t.Sub(first).Hours() / 24)
		if i < 0 || i >= usageWindow {
			continue
		}
		if perDay[i] == nil {
			perDay[i] = map[string]uint64{}
		}
		for c, n := range d.ByClient {
			perDay[i][c] += n
			totals[c] += n
			total += n
		}
	}
	clients := byReads(totals)
	named := clients[:min(len(clients), chartClients)]
	colour := func(c string) string {
		if i := slices.Index(named, c); i >= 0 {
			return chartPalette[i]
		}
		return chartPalette[len(chartPalette)-1]
	}
	var peak uint64 = 1
	for _, m := range perDay {
		var n uint64
		for _, v := range m {
			n += v
		}
		peak = max(peak, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, width, height, width, height)
	fmt.Fprintf(&b, `<title>Reads per day, last %d days, by client</title>`, usageWindow)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, left, bottom, width-4, bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%d</text><text x="%d" y="%d" text-anchor="end">0</text>`, left-4, top+4, peak, left-4, bottom)
	barW := float64(width-left-8) / usageWindow
	for i, m := range perDay {
		x := float64(left) + float64(i)*barW + 1
		y := float64(bottom)
		// The named clients bottom up, then the rest.
		order := append(append([]string(nil), named...), "")
		for _, c := range order {
			var n uint64
			if c == "" {
				for k, v := range m {
					if !slices.Contains(named, k) {
						n += v
					}
				}
			} else {
				n = m[c]
			}
			if n == 0 {
				continue
			}
			h := float64(n) / float64(peak) * float64(bottom-top)
			y -= h
			name := c
			if name == "" {
				name = "other"
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s, %d</title></rect>`,
				x, y, barW-2, h, colour(c), first.AddDate(0, 0, i).Format(time.DateOnly), html.EscapeString(name), n)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">today</text>`,
		left, bottom+14, first.Format("Jan 2"), width-4, bottom+14)
	switch {
	case msg != "":
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, left+8, top+40, html.EscapeString(msg))
	case total == 0:
		fmt.Fprintf(&b, `<text x="%d" y="%d">no reads in the last %d days</text>`, left+8, top+40, usageWindow)
	}
	x := left
	legend := append([]string(nil), named...)
	if len(clients) > len(named) {
		legend = append(legend, "")
	}
	for _, c := range legend {
		name, n := c, totals[c]
		if c == "" {
			name, n = "other", 0
			for _, k := range clients[len(named):] {
				n += totals[k]
			}
		}
		label := fmt.Sprintf("%s %d", clip(name, 24), n)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`,
			x, bottom+30, colour(c), x+14, bottom+39, html.EscapeString(label))
		x += 24 + 7*len([]rune(label))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
