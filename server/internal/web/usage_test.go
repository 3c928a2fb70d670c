package web

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/usage"
)

// usageTable answers usage queries from fixed reports.
type usageTable struct {
	recent, all usage.Report
	err         error
}

func (u usageTable) Usage(_ context.Context, q usage.Query) (usage.Report, error) {
	if u.err != nil {
		return usage.Report{}, u.err
	}
	if q.ID != "" {
		out := usage.Report{}
		for _, s := range u.recent.Skills {
			if s.ID == q.ID {
				out.Skills = append(out.Skills, s)
			}
		}
		return out, nil
	}
	if q.Since.IsZero() {
		return u.all, nil
	}
	return u.recent, nil
}

func totals(reads uint64, clients map[string]uint64) usage.Totals {
	return usage.Totals{Reads: reads, ByClient: clients, LastReadAt: time.Now().Add(-time.Hour)}
}

// The usage view lists the most read skills of the window with their
// clients, the catalog's skills nobody read in it (with their last read
// ever), and prompt gets apart; it says when counting is off or failed.
func TestUsagePage(t *testing.T) {
	today := time.Now().UTC().Format(time.DateOnly)
	src := usageTable{
		recent: usage.Report{Skills: []usage.SkillUsage{
			{ID: "team/deploy", Version: "3", Totals: totals(30, map[string]uint64{"claude-code": 20, "cursor": 10}),
				Days: []usage.DayUsage{{Date: today, Reads: 30, ByClient: map[string]uint64{"claude-code": 20, "cursor": 10}}}},
			{ID: "team/deploy", Version: "2", Totals: totals(5, map[string]uint64{"ci": 5})},
			{ID: "prompt:greet", Totals: totals(2, map[string]uint64{"claude-code": 2})},
		}},
		all: usage.Report{Skills: []usage.SkillUsage{{ID: "team/old", Totals: usage.Totals{Reads: 1, LastReadAt: time.Now().AddDate(0, -2, 0)}}}},
	}
	s, _ := newServer(t, Options{Usage: src}, "", published("team/deploy", "# Deploy\n"), published("team/old", "# Old\n"), published("team/new", "# New\n"))
	body := page200(t, s, "/usage")
	most := section(body, "most-h", "unread-h")
	if !strings.Contains(most, "team/deploy") || !strings.Contains(most, ">35<") || !strings.Contains(most, "claude-code 20, cursor 10, ci 5") {
		t.Fatalf("most read:\n%s", most)
	}
	unread := section(body, "unread-h", "prompts-usage-h")
	if strings.Contains(unread, "team/deploy") || !strings.Contains(unread, "team/old") || !strings.Contains(unread, "days ago") ||
		!strings.Contains(unread, "team/new") || !strings.Contains(unread, "never") {
		t.Fatalf("not read in 30 days:\n%s", unread)
	}
	if !strings.Contains(body, "prompt:greet") {
		t.Fatal("prompt gets are not listed")
	}

	off, _ := newServer(t, Options{}, "")
	if body := page200(t, off, "/usage"); !strings.Contains(body, "Usage counting is off") {
		t.Fatalf("without a source:\n%s", body)
	}
	failing, _ := newServer(t, Options{Usage: usageTable{err: errors.New("state down")}}, "")
	if body := page200(t, failing, "/usage"); !strings.Contains(body, "state down") {
		t.Fatalf("a failing source:\n%s", body)
	}
}

// The chart is well-formed SVG whatever the client names hold (they come
// from clients: escaped), names the clients reading most and sums the
// rest as other.
func TestUsageChartEscapesClientNames(t *testing.T) {
	today := time.Now().UTC().Format(time.DateOnly)
	clients := map[string]uint64{`<script>alert(1)</script>&"'`: 9, "a": 5, "b": 4, "c": 3, "d": 2, "e": 1, "f": 1}
	src := usageTable{recent: usage.Report{Skills: []usage.SkillUsage{{ID: "team/deploy", Version: "1", Totals: totals(25, clients),
		Days: []usage.DayUsage{{Date: today, Reads: 25, ByClient: clients}}}}}}
	s, _ := newServer(t, Options{Usage: src}, "", published("team/deploy", "# Deploy\n"))
	res := get(t, s, "/usage/chart/team/deploy", nil)
	svg := bodyOf(t, res)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if strings.Contains(svg, "<script>") {
		t.Fatalf("a client name reached the SVG unescaped:\n%s", svg)
	}
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v\n%s", err, svg)
		}
	}
	if !strings.Contains(svg, "other 2") || !strings.Contains(svg, "a 5") {
		t.Fatalf("legend: want the 5 most reading clients and other 2 (e and f):\n%s", svg)
	}
}

// page200 is the body of a GET that must succeed.
func page200(t *testing.T, s *Server, path string) string {
	t.Helper()
	res := get(t, s, path, nil)
	body := bodyOf(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", path, res.StatusCode, body)
	}
	return body
}

// section is body from the element with id from to the one with id to.
func section(body, from, to string) string {
	i, j := strings.Index(body, `id="`+from+`"`), strings.Index(body, `id="`+to+`"`)
	if i < 0 || j < i {
		return body
	}
	return body[i:j]
}
