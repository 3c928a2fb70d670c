package kv_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

// Update applies the same operations the same way through the engine's
// state::update (over a real socket) and in a store of this process; an
// operation the engine cannot apply is an error naming it.
func TestUpdateOverIIIAndLocalAgree(t *testing.T) {
	eng := startEngine(t)
	mem := store.OpenMemory()
	t.Cleanup(func() { _ = mem.Close() })
	ctx := context.Background()
	ops := [][]kv.Op{
		{{Type: kv.OpSet, Field: "id", Value: json.RawMessage(`"a/b"`)}, {Type: kv.OpIncrement, Field: "seq", By: 1}},
		{{Type: kv.OpIncrement, Field: "seq", By: 1}, {Type: kv.OpSet, Field: "v2", Value: json.RawMessage(`{"row":"00000000000000ff","at":"1764100000000000000"}`)}},
		{{Type: kv.OpMerge, Field: "labels", Value: json.RawMessage(`{"stable":2}`)}, {Type: kv.OpSet, Field: "y2", Value: json.RawMessage(`"broken \"x\""`)}},
		{{Type: kv.OpMerge, Field: "labels", Value: json.RawMessage(`{"prod":1}`)}, {Type: kv.OpRemove, Field: "y2"}},
	}
	results := map[string]map[string]any{}
	for name, st := range map[string]kv.Updater{
		"iii":   kv.III(connect(t, eng, "registry"), 0).(kv.Updater),
		"local": kv.Local(mem).(kv.Updater),
	} {
		var last json.RawMessage
		for _, o := range ops {
			var err error
			if last, err = st.Update(ctx, "h", "k", o...); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		var m map[string]any
		if err := json.Unmarshal(last, &m); err != nil {
			t.Fatalf("%s: %s: %v", name, last, err)
		}
		results[name] = m
	}
	want := map[string]any{"id": "a/b", "seq": 2.0, "labels": map[string]any{"stable": 2.0, "prod": 1.0},
		"v2": map[string]any{"row": "00000000000000ff", "at": "1764100000000000000"}}
	for name, got := range results {
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v; want %v", name, got, want)
		}
	}
	_, err := kv.III(connect(t, eng, "other"), 0).(kv.Updater).Update(ctx, "h", "k", kv.Op{Type: kv.OpIncrement, Field: "id", By: 1})
	if err == nil || !strings.Contains(err.Error(), "op 0") {
		t.Fatalf("increment of a string: %v", err)
	}
}
