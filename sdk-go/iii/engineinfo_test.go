package iii

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRawText(t *testing.T) {
	for raw, want := range map[string]string{
		``: "", `null`: "", ` "a\u00e9" `: "aé", `42`: "42", `true`: "true", `{"a":1}`: "", `[1]`: "", `"bad`: "",
	} {
		if got := RawText(json.RawMessage(raw)); got != want {
			t.Errorf("RawText(%q) = %q; want %q", raw, got, want)
		}
	}
}

func TestWorkerInfoDecodesAnyEngine(t *testing.T) {
	// The official engine sends a null name and leaves pid out; the row
	// must still decode, with its raw values kept as they came.
	var w WorkerInfo
	if err := json.Unmarshal([]byte(`{"id":"w-1","name":null,"runtime":null,"version":7,"status":"connected","function_count":3}`), &w); err != nil {
		t.Fatal(err)
	}
	if w.StringID() != "w-1" || w.StringName() != "" || w.Name != nil || string(w.Version) != "7" || string(w.FunctionCount) != "3" || w.OS != nil {
		t.Fatalf("decoded %+v", w)
	}
}

func TestFunctionInfoInternal(t *testing.T) {
	for md, want := range map[string]bool{``: false, `{"internal":true}`: true, `{"internal":"yes"}`: false, `null`: false} {
		if got := (FunctionInfo{Metadata: json.RawMessage(md)}).Internal(); got != want {
			t.Errorf("Internal(%s) = %v; want %v", md, got, want)
		}
	}
}

func TestShowName(t *testing.T) {
	if got := ShowName(strings.Repeat("w", 100)); got != strings.Repeat("w", MaxNameRunes)+"…" {
		t.Errorf("a long name: %q", got)
	}
	if got := ShowName("a\u202eb\tc\u200bd"); got != "a?b?c?d" {
		t.Errorf("control and format characters: %q", got)
	}
}
