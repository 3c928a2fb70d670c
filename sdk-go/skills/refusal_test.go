package skills

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// The reading of refusals is shared with the Node and Python publishers
// (conformance/vectors/refusals.json): verdict, holder, advice and the
// logged line are checked against the same cases.
func TestRefusalVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "vectors", "refusals.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Refusal []struct {
			Kind, Name, Code, Message, Verdict, Advice, Line string
			Holder                                           *Holder
		} `json:"refusal"`
		GaveUpHeld []struct {
			Held []struct {
				Kind, Name string
			} `json:"held"`
			Message string `json:"message"`
		} `json:"gave_up_held"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Refusal) < 15 || len(file.GaveUpHeld) < 2 {
		t.Fatalf("only %d refusal and %d gave_up_held vectors", len(file.Refusal), len(file.GaveUpHeld))
	}
	for i, c := range file.Refusal {
		re := refusalOf(c.Kind, c.Name, &iii.InvocationError{Code: c.Code, Message: c.Message})
		switch {
		case c.Verdict == "transient":
			if re != nil {
				t.Errorf("case %d (%s %s): a refusal %q; want a failure that stops the round", i, c.Code, c.Message, re)
			}
			continue
		case re == nil:
			t.Errorf("case %d (%s %s): not read as a refusal", i, c.Code, c.Message)
			continue
		}
		if got := map[bool]string{true: "held", false: "rejected"}[re.Retried()]; got != c.Verdict {
			t.Errorf("case %d: verdict %s, want %s", i, got, c.Verdict)
		}
		if (re.Holder == nil) != (c.Holder == nil) || re.Holder != nil && *re.Holder != *c.Holder {
			t.Errorf("case %d: holder %+v, want %+v", i, re.Holder, c.Holder)
		}
		if re.Advice != c.Advice {
			t.Errorf("case %d: advice\n%q\nwant\n%q", i, re.Advice, c.Advice)
		}
		if re.Error() != c.Line {
			t.Errorf("case %d: line\n%q\nwant\n%q", i, re.Error(), c.Line)
		}
	}
	for _, c := range file.GaveUpHeld {
		var held []*RejectedError
		for _, h := range c.Held {
			held = append(held, &RejectedError{Kind: h.Kind, Name: h.Name})
		}
		if got := gaveUpHeldMessage(held); got != c.Message {
			t.Errorf("gave up while held:\n%q\nwant\n%q", got, c.Message)
		}
	}
}
