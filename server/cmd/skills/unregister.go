package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/iii-skills/skills/sdk-go/rules"
)

func init() {
	subcommands = append(subcommands, subcommand{"unregister", runUnregister})
}

// runUnregister removes a published skill (or, with --prompt, a prompt) as
// this connection: skills::unregister / prompts::unregister with the
// registry's ownership rules (an id a live connection registered stays
// that connection's; a scoped --engine-token acts within its namespaces).
func runUnregister(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("unregister", "unregister [--prompt] ID", stdout, stderr)
	pos, rc := c.parse(args, 1)
	if rc >= 0 {
		return rc
	}
	fn := rules.FnSkillsUnregister
	if *c.prompt {
		fn = rules.FnPromptsUnregister
	}
	out, rc := c.call(fn, map[string]any{c.key(): pos[0]})
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var res struct {
		Removed bool `json:"removed"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		fmt.Fprintf(stderr, "skills unregister: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if !res.Removed {
		fmt.Fprintf(stdout, "%s: nothing was registered under it\n", pos[0])
		return 0
	}
	fmt.Fprintf(stdout, "%s: unregistered\n", pos[0])
	return 0
}
