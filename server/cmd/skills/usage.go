package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/usage"
)

func init() {
	subcommands = append(subcommands, subcommand{"usage", runUsage})
}

// runUsage is `skills usage [ID]`: reads per skill and version
// (skills::usage), summed over every registry instance sharing state.
func runUsage(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("usage", "usage [--prompt] [--since YYYY-MM-DD] [--limit N] [--json] [ID]", stdout, stderr)
	since := c.fs.String("since", "", "Count the reads from this UTC day on (YYYY-MM-DD; default: every read)")
	limit := c.fs.Int("limit", 0, "Show the N most read skill versions (0: all)")
	pos, rc := c.positional(args)
	if rc >= 0 {
		return rc
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "skills usage: expected at most one ID, got %d arguments (see skills usage --help)\n", len(pos))
		return 2
	}
	payload := map[string]any{}
	if len(pos) == 1 {
		payload["id"] = pos[0]
		if *c.prompt {
			payload["id"] = core.PromptUsageID(pos[0])
		}
	}
	if *since != "" {
		payload["since"] = *since
	}
	if *limit != 0 {
		payload["limit"] = *limit
	}
	out, rc := c.call(rules.FnSkillsUsage, payload)
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var rep usage.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		fmt.Fprintf(stderr, "skills usage: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if len(rep.Skills) == 0 {
		what := "no skill was read"
		if len(pos) == 1 {
			what = pos[0] + " was not read"
		}
		if rep.Since != "" {
			what += " since " + rep.Since
		}
		fmt.Fprintln(stdout, what)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tREADS\tSURFACES\tCLIENTS\tLAST_READ_AT")
	for _, s := range rep.Skills {
		version := s.Version
		if version == "" {
			version = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.ID, version, s.Reads, counts(s.BySurface), counts(s.ByClient),
			s.LastReadAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	_ = tw.Flush()
	if len(pos) == 1 {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "DATE\tVERSION\tREADS\tCLIENTS")
		for _, s := range rep.Skills {
			for _, d := range s.Days {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.Date, s.Version, d.Reads, counts(d.ByClient))
			}
		}
		_ = tw.Flush()
	}
	if rep.Other != nil {
		fmt.Fprintf(stdout, "\n%d read(s) counted as \"other\": the table of pending counts was full (docs/observability.md)\n", rep.Other.Reads)
	}
	return 0
}

// counts is "a=3,b=1", most first.
func counts(m map[string]uint64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}
