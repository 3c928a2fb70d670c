package store

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// The commit observer sees every write once, across group commits, and a
// file-backed store reports the time of its page writes and fdatasyncs.
func TestCommitObserver(t *testing.T) {
	eachStore(t, func(t *testing.T, s *Store) {
		var mu sync.Mutex
		var commits, writes int
		var stats []CommitStats
		s.SetCommitObserver(func(st CommitStats) {
			mu.Lock()
			defer mu.Unlock()
			commits++
			writes += st.Writes
			stats = append(stats, st)
		})
		const writers, each = 8, 25
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					if _, err := s.Set("obs", fmt.Sprintf("%d-%d", w, i), json.RawMessage(`1`)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		done := make(chan error, 1)
		s.SetGroupAsync([]Write{{Scope: "obs", Key: "g1", Value: json.RawMessage(`1`)}, {Scope: "obs", Key: "g2", Value: json.RawMessage(`2`)}},
			func(_ []json.RawMessage, err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := writers*each + 2; writes != want {
			t.Fatalf("observer saw %d writes in %d commits, want %d", writes, commits, want)
		}
		for _, st := range stats {
			if st.Err != nil || st.Writes < 1 || st.Duration <= 0 || st.Sync < 0 || st.Sync > st.Duration {
				t.Fatalf("commit stats %+v: want Writes ≥ 1, no error, 0 ≤ Sync ≤ Duration", st)
			}
			if s.db != nil && st.Sync <= 0 {
				t.Fatalf("file store commit %+v reports no write and sync time", st)
			}
			if s.db == nil && st.Sync != 0 {
				t.Fatalf("memory store commit %+v reports a sync", st)
			}
		}
	})
}

// A panicking observer neither stops the committer nor fails the write;
// removing the observer stops the calls.
func TestCommitObserverPanicAndRemove(t *testing.T) {
	s := OpenMemory()
	t.Cleanup(func() { _ = s.Close() })
	calls := 0
	s.SetCommitObserver(func(CommitStats) { calls++; panic("observer bug") })
	if _, err := s.Set("obs", "a", json.RawMessage(`1`)); err != nil {
		t.Fatalf("Set with a panicking observer: %v", err)
	}
	s.SetCommitObserver(nil)
	if _, err := s.Set("obs", "b", json.RawMessage(`2`)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get("obs", "b"); err != nil || !ok || string(v) != "2" {
		t.Fatalf("Get after a panicking observer = %s %v %v", v, ok, err)
	}
	if calls != 1 {
		t.Fatalf("observer called %d times, want 1 (removed after the first write)", calls)
	}
}
