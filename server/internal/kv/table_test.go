package kv_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

// Both Tables behave alike: get, set, list by prefix in key order, delete;
// the store-backed one keeps its rows across a reopen of the file.
func TestTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]kv.Table{"memory": kv.NewMemoryTable(), "store": kv.TableOf(kv.Local(st), "rows")} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for _, k := range []string{"b/2", "a/1", "b/1", "c"} {
				if err := s.Set(ctx, k, json.RawMessage(`{"k":"`+k+`"}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Set(ctx, "bad", json.RawMessage(`{`)); err == nil {
				t.Fatal("invalid JSON was stored")
			}
			v, ok, err := s.Get(ctx, "a/1")
			if err != nil || !ok || string(v) != `{"k":"a/1"}` {
				t.Fatalf("Get = %s %v %v", v, ok, err)
			}
			if _, ok, _ := s.Get(ctx, "missing"); ok {
				t.Fatal("Get of a missing key found it")
			}
			rows, err := s.List(ctx, "b/")
			if err != nil || len(rows) != 2 || rows[0].Key != "b/1" || rows[1].Key != "b/2" || string(rows[1].Value) != `{"k":"b/2"}` {
				t.Fatalf("List(b/) = %v %v; want b/1, b/2", rows, err)
			}
			if err := s.Delete(ctx, "b/1"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "never-there"); err != nil {
				t.Fatalf("Delete of a missing key: %v", err)
			}
			rows, _ = s.List(ctx, "")
			if len(rows) != 3 || rows[0].Key != "a/1" || rows[2].Key != "c" {
				t.Fatalf("List() = %v", rows)
			}
		})
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := kv.TableOf(kv.Local(st), "rows").List(context.Background(), "")
	if err != nil || len(rows) != 3 {
		t.Fatalf("after reopening: %v %v; want the 3 rows", rows, err)
	}
}
