package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func eachStore(t *testing.T, f func(t *testing.T, s *Store)) {
	t.Run("file", func(t *testing.T) {
		s, _ := openTemp(t)
		f(t, s)
	})
	t.Run("memory", func(t *testing.T) {
		s := OpenMemory()
		t.Cleanup(func() { _ = s.Close() })
		f(t, s)
	})
}

func TestSetGetDelete(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		old, err := s.Set("users", "a", json.RawMessage(`{"n":1}`))
		if err != nil || old != nil {
			t.Fatalf("first Set = %s, %v; want nil, nil", old, err)
		}
		old, err = s.Set("users", "a", json.RawMessage(`{"n":2}`))
		if err != nil || string(old) != `{"n":1}` {
			t.Fatalf("second Set old = %s, %v", old, err)
		}
		v, ok, err := s.Get("users", "a")
		if err != nil || !ok || string(v) != `{"n":2}` {
			t.Fatalf("Get = %s %v %v", v, ok, err)
		}
		if _, ok, _ := s.Get("users", "missing"); ok {
			t.Fatal("Get of a missing key reported ok")
		}
		if _, ok, _ := s.Get("nope", "a"); ok {
			t.Fatal("Get in a missing scope reported ok")
		}
		old, existed, err := s.Delete("users", "a")
		if err != nil || !existed || string(old) != `{"n":2}` {
			t.Fatalf("Delete = %s %v %v", old, existed, err)
		}
		old, existed, err = s.Delete("users", "a")
		if err != nil || existed || old != nil {
			t.Fatalf("second Delete = %s %v %v", old, existed, err)
		}
		if _, ok, _ := s.Get("users", "a"); ok {
			t.Fatal("deleted key still readable")
		}
	})
}

func TestNullValueIsDistinctFromAbsent(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		if _, err := s.Set("s", "k", json.RawMessage(`null`)); err != nil {
			t.Fatal(err)
		}
		v, ok, _ := s.Get("s", "k")
		if !ok || string(v) != "null" {
			t.Fatalf("Get = %s %v; want null true", v, ok)
		}
		old, _ := s.Set("s", "k", json.RawMessage(`1`))
		if string(old) != "null" {
			t.Fatalf("old = %q; want null", old)
		}
	})
}

func TestListInsertionOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		for _, k := range []string{"c", "a", "b"} {
			if _, err := s.Set("sc", k, json.RawMessage(`"`+k+`1"`)); err != nil {
				t.Fatal(err)
			}
		}
		// Updating keeps the position; delete + re-create moves to the end.
		mustSet(t, s, "sc", "a", `"a2"`)
		if _, _, err := s.Delete("sc", "c"); err != nil {
			t.Fatal(err)
		}
		mustSet(t, s, "sc", "c", `"c2"`)
		got := listStrings(t, s, "sc")
		want := `["a2","b1","c2"]`
		if got != want {
			t.Fatalf("List = %s; want %s", got, want)
		}
		keys, _ := s.Keys("sc")
		if fmt.Sprint(keys) != "[a b c]" {
			t.Fatalf("Keys = %v", keys)
		}
		if got := listStrings(t, s, "unknown"); got != "[]" {
			t.Fatalf("List of unknown scope = %s; want []", got)
		}
	})
}

func TestListGroups(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		mustSet(t, s, "zeta", "k", `1`)
		mustSet(t, s, "alpha", "k", `1`)
		mustSet(t, s, "alpha", "j", `1`)
		mustSet(t, s, "gone", "k", `1`)
		if _, _, err := s.Delete("gone", "k"); err != nil {
			t.Fatal(err)
		}
		g, err := s.ListGroups()
		if err != nil || fmt.Sprint(g) != "[alpha zeta]" {
			t.Fatalf("ListGroups = %v %v", g, err)
		}
	})
}

func TestUpdate(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		inc := func(old json.RawMessage, exists bool) (json.RawMessage, error) {
			n := 0
			if exists {
				if err := json.Unmarshal(old, &n); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(fmt.Sprint(n + 1)), nil
		}
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, _, err := s.Update("c", "n", inc); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		v, _, _ := s.Get("c", "n")
		if string(v) != "50" {
			t.Fatalf("counter = %s; want 50 (updates must be atomic)", v)
		}
		old, nv, existed, err := s.Update("c", "n", inc)
		if err != nil || string(old) != "50" || string(nv) != "51" || !existed {
			t.Fatalf("Update = %s %s %v %v", old, nv, existed, err)
		}
		// A failing function writes nothing and returns its error.
		boom := errors.New("boom")
		_, _, _, err = s.Update("c", "n", func(json.RawMessage, bool) (json.RawMessage, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v; want boom", err)
		}
		// A panicking function is contained.
		_, _, _, err = s.Update("c", "n", func(json.RawMessage, bool) (json.RawMessage, error) { panic("bad") })
		if err == nil {
			t.Fatal("panic in UpdateFunc returned no error")
		}
		// Invalid JSON from the function is refused.
		_, _, _, err = s.Update("c", "n", func(json.RawMessage, bool) (json.RawMessage, error) { return json.RawMessage("{"), nil })
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v; want ErrInvalid", err)
		}
		// nil leaves the value unchanged.
		_, nv, _, err = s.Update("c", "n", func(json.RawMessage, bool) (json.RawMessage, error) { return nil, nil })
		if err != nil || string(nv) != "51" {
			t.Fatalf("no-op Update = %s %v", nv, err)
		}
		if v, _, _ := s.Get("c", "n"); string(v) != "51" {
			t.Fatalf("after failed updates value = %s; want 51", v)
		}
	})
}

func TestValidation(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		cases := []struct {
			name       string
			scope, key string
			value      string
		}{
			{"empty scope", "", "k", `1`},
			{"empty key", "s", "", `1`},
			{"invalid json", "s", "k", `{"a":`},
			{"empty value", "s", "k", ``},
		}
		for _, c := range cases {
			if _, err := s.Set(c.scope, c.key, json.RawMessage(c.value)); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err = %v; want ErrInvalid", c.name, err)
			}
		}
		if _, _, err := s.Delete("", "k"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Delete empty scope: %v", err)
		}
	})
}

func TestCallerBuffersAreNotAliased(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		buf := []byte(`"abc"`)
		mustSet(t, s, "s", "k", string(buf))
		in := json.RawMessage(buf)
		if _, err := s.Set("s", "k2", in); err != nil {
			t.Fatal(err)
		}
		in[1] = 'X'
		v, _, _ := s.Get("s", "k2")
		if string(v) != `"abc"` {
			t.Fatalf("stored value changed with caller's buffer: %s", v)
		}
		v[1] = 'Y'
		v2, _, _ := s.Get("s", "k2")
		if string(v2) != `"abc"` {
			t.Fatalf("mutating a Get result changed the store: %s", v2)
		}
	})
}

func TestReopenKeepsDataAndOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, s, "sc", "b", `"b"`)
	mustSet(t, s, "sc", "a", `"a"`)
	mustSet(t, s, "sc", "x", `"x"`)
	if _, _, err := s.Delete("sc", "x"); err != nil {
		t.Fatal(err)
	}
	mustSet(t, s, "other", "k", `{"deep":[1,2]}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}
	if _, err := s.Set("sc", "k", json.RawMessage("1")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close = %v; want ErrClosed", err)
	}
	if _, _, err := s.Get("sc", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v; want ErrClosed", err)
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := listStrings(t, s2, "sc"); got != `["b","a"]` {
		t.Fatalf("after reopen List = %s", got)
	}
	// New keys go after the reloaded ones.
	mustSet(t, s2, "sc", "c", `"c"`)
	if got := listStrings(t, s2, "sc"); got != `["b","a","c"]` {
		t.Fatalf("after reopen + Set List = %s", got)
	}
	v, ok, _ := s2.Get("other", "k")
	if !ok || string(v) != `{"deep":[1,2]}` {
		t.Fatalf("other/k = %s %v", v, ok)
	}
}

func TestConcurrentWritersAllAcknowledgedWritesPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Set(fmt.Sprintf("w%d", w), fmt.Sprintf("k%d", i), json.RawMessage(fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for w := 0; w < writers; w++ {
		vals, err := s2.List(fmt.Sprintf("w%d", w))
		if err != nil || len(vals) != each {
			t.Fatalf("w%d: %d values, %v", w, len(vals), err)
		}
		for i, v := range vals {
			if string(v) != fmt.Sprint(i) {
				t.Fatalf("w%d[%d] = %s; want %d (insertion order)", w, i, v, i)
			}
		}
	}
}

func TestOpenFailsOnCorruptPath(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
}

func mustSet(t testing.TB, s *Store, scope, key, v string) {
	t.Helper()
	if _, err := s.Set(scope, key, json.RawMessage(v)); err != nil {
		t.Fatalf("Set %s/%s: %v", scope, key, err)
	}
}

func listStrings(t testing.TB, s *Store, scope string) string {
	t.Helper()
	vals, err := s.List(scope)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(vals)
	return string(b)
}

func TestAsyncWrites(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		type res struct {
			old     string
			existed bool
			err     error
		}
		ch := make(chan res, 1)
		s.SetAsync("a", "k", json.RawMessage(`1`), func(old json.RawMessage, err error) { ch <- res{string(old), false, err} })
		if r := <-ch; r.err != nil || r.old != "" {
			t.Fatalf("SetAsync = %+v", r)
		}
		s.SetAsync("a", "k", json.RawMessage(`2`), func(old json.RawMessage, err error) { ch <- res{string(old), false, err} })
		if r := <-ch; r.err != nil || r.old != "1" {
			t.Fatalf("second SetAsync = %+v", r)
		}
		// The callback runs after the write is visible.
		s.SetAsync("a", "k", json.RawMessage(`3`), func(json.RawMessage, error) {
			v, _, _ := s.Get("a", "k")
			ch <- res{old: string(v)}
		})
		if r := <-ch; r.old != "3" {
			t.Fatalf("value seen by the callback = %s; want 3", r.old)
		}
		s.UpdateAsync("a", "k", func(old json.RawMessage, _ bool) (json.RawMessage, error) {
			return json.RawMessage(string(old) + "0"), nil
		}, func(old, nv json.RawMessage, existed bool, err error) {
			ch <- res{string(old) + ">" + string(nv), existed, err}
		})
		if r := <-ch; r.err != nil || r.old != "3>30" || !r.existed {
			t.Fatalf("UpdateAsync = %+v", r)
		}
		s.DeleteAsync("a", "k", func(old json.RawMessage, existed bool, err error) { ch <- res{string(old), existed, err} })
		if r := <-ch; r.err != nil || r.old != "30" || !r.existed {
			t.Fatalf("DeleteAsync = %+v", r)
		}
		s.SetAsync("", "k", json.RawMessage(`1`), func(_ json.RawMessage, err error) { ch <- res{err: err} })
		if r := <-ch; !errors.Is(r.err, ErrInvalid) {
			t.Fatalf("invalid SetAsync = %+v", r)
		}
		// A panicking callback does not stop the committer.
		s.SetAsync("a", "p", json.RawMessage(`1`), func(json.RawMessage, error) { panic("callback") })
		mustSet(t, s, "a", "after", `1`)
		_ = s.Close()
		s.SetAsync("a", "k", json.RawMessage(`1`), func(_ json.RawMessage, err error) { ch <- res{err: err} })
		if r := <-ch; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("SetAsync after Close = %+v", r)
		}
	})
}

func TestCloseReleasesMemoryData(t *testing.T) {
	s := OpenMemory()
	mustSet(t, s, "s", "k", `"v"`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem != nil {
		t.Fatal("a closed memory-only store still holds its data")
	}
}

// A file written with 4 KiB pages (before the store chose 8 KiB) opens,
// keeps its data and order, and takes new writes of every size.
func TestOpensFilesOfOtherPageSizes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("sc"))
		if err != nil {
			return err
		}
		for i, k := range []string{"b", "a"} {
			rec := binary.BigEndian.AppendUint64(nil, uint64(i))
			if err := b.Put([]byte(k), append(rec, `"`+k+`"`...)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := `"` + strings.Repeat("x", 20000) + `"`
	mustSet(t, s, "sc", "c", big)
	for i := range 50 {
		mustSet(t, s, "sc", fmt.Sprintf("k%02d", i), `"`+strings.Repeat("y", 2100)+`"`)
	}
	got, err := s.Keys("sc")
	if err != nil || len(got) != 53 || got[0] != "b" || got[1] != "a" || got[2] != "c" {
		t.Fatalf("Keys = %v, %v; want b, a, c, k00…k49", got, err)
	}
	if v, ok, _ := s.Get("sc", "c"); !ok || string(v) != big {
		t.Fatalf("sc/c holds %d bytes, want the %d written", len(v), len(big))
	}
}

func TestSetGroupAsyncCommitsTogether(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		mustSet(t, s, "rows", "a", `"old"`)
		type res struct {
			olds []json.RawMessage
			err  error
		}
		ch := make(chan res, 1)
		group := func(w ...Write) res {
			s.SetGroupAsync(w, func(olds []json.RawMessage, err error) { ch <- res{olds, err} })
			return <-ch
		}
		// Concurrent single writes share batches with the group.
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Set("other", fmt.Sprint(i), json.RawMessage(`1`)); err != nil {
					t.Error(err)
				}
			}()
		}
		r := group(Write{Scope: "rows", Key: "a", Value: json.RawMessage(`"new"`)}, Write{Scope: "hist", Key: "a", Value: json.RawMessage(`{"n":1}`)})
		wg.Wait()
		if r.err != nil || len(r.olds) != 2 || string(r.olds[0]) != `"old"` || r.olds[1] != nil {
			t.Fatalf("SetGroupAsync = %+v; want olds [\"old\", nil]", r)
		}
		if got := listStrings(t, s, "rows") + listStrings(t, s, "hist"); got != `["new"][{"n":1}]` {
			t.Fatalf("after the group: %s", got)
		}
		r = group(Write{Scope: "hist", Key: "b", Value: json.RawMessage(`2`)}, Write{Scope: "hist", Key: "a", Delete: true})
		if r.err != nil || r.olds[1] == nil || string(r.olds[1]) != `{"n":1}` {
			t.Fatalf("group with a delete = %+v", r)
		}
		if got := listStrings(t, s, "hist"); got != `[2]` {
			t.Fatalf("after the delete: %s", got)
		}
		if r := group(Write{Scope: "rows", Value: json.RawMessage(`1`)}); !errors.Is(r.err, ErrInvalid) {
			t.Fatalf("group with an empty key = %+v; want ErrInvalid", r)
		}
		if r := group(); r.err != nil || r.olds != nil {
			t.Fatalf("empty group = %+v", r)
		}
		_ = s.Close()
		if r := group(Write{Scope: "rows", Key: "b", Value: json.RawMessage(`1`)}); !errors.Is(r.err, ErrClosed) {
			t.Fatalf("group after Close = %+v", r)
		}
	})
}
