package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
)

// runSearch is `skills search [flags] QUERY...`: skills::search on the
// registry behind --url, printed as a ranked list (or JSON with --json).
func runSearch(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills search", flag.ContinueOnError)
	limit := fs.Int("limit", core.DefaultSearchLimit, fmt.Sprintf("Most results (1 to %d)", core.MaxSearchLimit))
	namespace := fs.String("namespace", "", "Only skills with this id or under it (\"iii\" keeps iii and iii/…)")
	asJSON := fs.Bool("json", false, "Print "+rules.FnSkillsSearch+"'s JSON answer")
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of the iii engine")
	timeout := fs.Duration("timeout", 30*time.Second, "How long to wait for the engine and the result")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: skills search [flags] QUERY...")
		fs.PrintDefaults()
	}
	// Flags may come before, between or after the words of the query.
	var words []string
	for {
		if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		words, args = append(words, fs.Arg(0)), fs.Args()[1:]
	}
	query := strings.Join(words, " ")
	if strings.TrimSpace(query) == "" {
		fmt.Fprintln(stderr, `skills search: say what you are looking for, e.g. skills search "shrink images for the web"`)
		return 2
	}
	payload := map[string]any{"query": query, "limit": *limit}
	if *namespace != "" {
		payload["namespace"] = *namespace
	}
	body, err := json.Marshal(payload)
	if err != nil {
		fmt.Fprintf(stderr, "skills search: %v\n", err)
		return 2
	}
	if err := probeEngine(*engineURL); err != nil {
		fmt.Fprintf(stderr, "skills search: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	client := iii.RegisterWorker(*engineURL, iii.WithName("skills-search"), iii.WithAnonymous(),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(*engineToken))
	defer client.Close()
	if err := client.Connect(ctx); err != nil {
		fmt.Fprintf(stderr, "skills search: cannot reach the iii engine at %s: %v\n", *engineURL, err)
		return 1
	}
	out, err := client.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsSearch, Data: body, Timeout: *timeout})
	if err != nil {
		var ie *iii.InvocationError
		if errors.As(err, &ie) && ie.Code == rules.CodeInvalidArguments {
			fmt.Fprintf(stderr, "skills search: %s\n", ie.Message)
			return 2
		}
		fmt.Fprintf(stderr, "skills search: %s: %v\n", rules.FnSkillsSearch, err)
		return 1
	}
	if *asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var res core.SearchOutput
	if err := json.Unmarshal(out, &res); err != nil {
		fmt.Fprintf(stderr, "skills search: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	printSearch(stdout, res)
	return 0
}

func printSearch(w io.Writer, res core.SearchOutput) {
	if len(res.Results) == 0 {
		fmt.Fprintln(w, "No skill matches this query.")
		return
	}
	if res.LowConfidence {
		fmt.Fprintln(w, "Low confidence: no skill matches the query well; the closest are:")
	}
	for i, r := range res.Results {
		fmt.Fprintf(w, "%2d. %s  (%s, score %.2f)\n    %s\n", i+1, r.ID, r.Origin, r.Score, r.Title)
		if r.Description != "" {
			fmt.Fprintf(w, "    %s\n", r.Description)
		}
	}
}
