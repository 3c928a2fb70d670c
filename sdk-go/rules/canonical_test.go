package rules

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

// canonicalCases cover every escape the canonical form has.
var canonicalCases = []struct {
	desc, fid string
	args      []PromptArg
}{
	{"plain", "a::b", nil},
	{"Review <code> & \"docs\"\n\t\u00fc \u2028 \U0001F600 \\ \b\f\r \x01\x1f\x7f", "acme::review",
		[]PromptArg{{Name: "diff", Description: strp("the diff\n"), Required: true}, {Name: "style"}, {Name: "empty", Description: strp("")}}},
}

func TestCanonicalPromptIsJSONWithSortedKeys(t *testing.T) {
	got := string(CanonicalPrompt(canonicalCases[1].desc, canonicalCases[1].fid, canonicalCases[1].args))
	want := `{"arguments":[{"description":"the diff\n","name":"diff","required":true},{"name":"style","required":false},{"description":"","name":"empty","required":false}],` +
		`"description":"Review <code> & \"docs\"\n\tü ` + "\u2028" + ` 😀 \\ \b\f\r \u0001\u001f` + "\x7f" + `","function_id":"acme::review"}`
	if got != want {
		t.Fatalf("canonical\n%s\nwant\n%s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(got), &back); err != nil || back["description"] != canonicalCases[1].desc {
		t.Fatalf("does not decode back: %v %q", err, back["description"])
	}
	if s := string(CanonicalPrompt("", "f", nil)); s != `{"arguments":[],"description":"","function_id":"f"}` {
		t.Fatalf("no arguments: %s", s)
	}
	if s := string(AppendCanonicalString(nil, "a\xffb")); s != "\"a\uFFFDb\"" {
		t.Fatalf("invalid UTF-8: %q", s)
	}
}

// The recipes docs/trust.md gives the other publishers produce the same
// bytes: Python's json.dumps(…, ensure_ascii=False, separators=(",", ":"),
// sort_keys=True) and Node's JSON.stringify of the object built in key
// order.
func TestCanonicalPromptMatchesPythonAndNode(t *testing.T) {
	for _, c := range canonicalCases {
		args := []map[string]any{}
		for _, a := range c.args {
			m := map[string]any{"name": a.Name, "required": a.Required}
			if a.Description != nil {
				m["description"] = *a.Description
			}
			args = append(args, m)
		}
		input, _ := json.Marshal(map[string]any{"arguments": args, "description": c.desc, "function_id": c.fid})
		want := string(CanonicalPrompt(c.desc, c.fid, c.args))
		for _, tool := range []struct{ bin, script string }{
			{"python3", `import json,sys
d=json.load(sys.stdin)
sys.stdout.write(json.dumps(d, ensure_ascii=False, separators=(",", ":"), sort_keys=True))`},
			{"node", `let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{const d=JSON.parse(s);
const o={arguments:d.arguments.map(a=>{const x={};if(a.description!==undefined&&a.description!==null)x.description=a.description;x.name=a.name;x.required=!!a.required;return x;}),description:d.description,function_id:d.function_id};
process.stdout.write(JSON.stringify(o));});`},
		} {
			if _, err := exec.LookPath(tool.bin); err != nil {
				t.Logf("not run: %s not found", tool.bin)
				continue
			}
			flag := "-c"
			if tool.bin == "node" {
				flag = "-e"
			}
			cmd := exec.Command(tool.bin, flag, tool.script)
			cmd.Stdin = strings.NewReader(string(input))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", tool.bin, err)
			}
			if string(out) != want {
				t.Fatalf("%s writes\n%q\nthe registry\n%q", tool.bin, out, want)
			}
		}
	}
}
