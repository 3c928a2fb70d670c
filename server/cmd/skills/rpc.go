package main

// `skills sp-tools --format schema|openai|anthropic` (the /rpc endpoint
// itself is wired in server/internal/app).

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

func runSPTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills sp-tools", flag.ContinueOnError)
	format := fs.String("format", "schema", "Tool definition format: schema (the seed's JSON Schema form), openai or anthropic")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	defs, err := skillsprotocol.ToolDefinitions(*format)
	if err != nil {
		fmt.Fprintln(stderr, "skills sp-tools:", err)
		return 2
	}
	b, _ := json.MarshalIndent(defs, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return 0
}
