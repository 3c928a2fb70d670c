package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

func newMem(t *testing.T, cfg Config) (*History, *store.Store) {
	t.Helper()
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	if cfg.Scope == "" {
		cfg.Scope = "skills"
	}
	cfg.Noun = "skill"
	return New(kv.Local(st), cfg), st
}

func mustRecord(t *testing.T, h *History, id, content string) (Version, bool) {
	t.Helper()
	v, created, err := h.Record(id, content, Meta{Message: "m", Author: "a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, created
}

func TestRecordNumbersAndDedupes(t *testing.T) {
	h, _ := newMem(t, Config{})
	if v, c := mustRecord(t, h, "a", "one"); !c || v.Version != 1 {
		t.Fatalf("first: %+v %v", v, c)
	}
	if v, c := mustRecord(t, h, "a", "one"); c || v.Version != 1 {
		t.Fatalf("same content again: %+v %v", v, c)
	}
	if v, c := mustRecord(t, h, "a", "two"); !c || v.Version != 2 || v.Bytes != 3 || v.Message != "m" || v.Author != "a" {
		t.Fatalf("second: %+v %v", v, c)
	}
	l, err := h.Versions("a")
	if err != nil {
		t.Fatal(err)
	}
	if l.Latest != 2 || len(l.Versions) != 2 || l.Versions[0].Version != 2 || l.Versions[0].Labels[0] != "latest" {
		t.Fatalf("listing: %+v", l)
	}
	if c, err := h.Content("a", 1); err != nil || c != "one" {
		t.Fatalf("content 1: %q %v", c, err)
	}
}

func TestLabelsAndSelectors(t *testing.T) {
	h, _ := newMem(t, Config{Protected: []string{"production"}, AdminToken: "s3cret"})
	mustRecord(t, h, "a", "one")
	mustRecord(t, h, "a", "two")
	if _, err := h.Label("a", "staging", 1, ""); err != nil {
		t.Fatal(err)
	}
	if c, p, err := h.Select("a", "staging"); err != nil || c != "one" || p.Version != 1 {
		t.Fatalf("select staging: %q %d %v", c, p.Version, err)
	}
	if c, _, err := h.Select("a", "latest"); err != nil || c != "two" {
		t.Fatalf("select latest: %q %v", c, err)
	}
	if got := h.Served("a", "staging"); got != 1 {
		t.Fatalf("served: %d", got)
	}
	var he *Error
	if _, err := h.Label("a", "production", 1, "wrong"); !errors.As(err, &he) || !strings.Contains(err.Error(), "protected") {
		t.Fatalf("protected without token: %v", err)
	}
	if _, err := h.Label("a", "production", 1, "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Label("a", "latest", 1, ""); err == nil || !strings.Contains(err.Error(), "registry only") {
		t.Fatalf("latest by hand: %v", err)
	}
	if _, err := h.Label("a", "x", 9, ""); err == nil || !strings.Contains(err.Error(), "no version 9 (kept: 1-2)") {
		t.Fatalf("unknown version: %v", err)
	}
	if _, _, err := h.Select("a", "nope"); err == nil || !strings.Contains(err.Error(), `no label "nope"`) {
		t.Fatalf("unknown label: %v", err)
	}
	if _, _, err := h.Select("b", "1"); err == nil || !strings.Contains(err.Error(), "skill b has no versions") {
		t.Fatalf("unknown id: %v", err)
	}
	for _, bad := range []string{"", "Prod", "-x", "12", strings.Repeat("a", 65)} {
		if CheckLabel(bad) == nil {
			t.Errorf("label %q accepted", bad)
		}
	}
}

func TestRetentionKeepsLabelled(t *testing.T) {
	h, st := newMem(t, Config{Retain: 3})
	mustRecord(t, h, "a", "v1")
	if _, err := h.Label("a", "keep", 1, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"v2", "v3", "v4", "v5", "v6"} {
		mustRecord(t, h, "a", c)
	}
	l, _ := h.Versions("a")
	var ns []int
	for _, v := range l.Versions {
		ns = append(ns, v.Version)
	}
	if len(ns) != 4 || ns[0] != 6 || ns[3] != 1 {
		t.Fatalf("kept %v, want [6 5 4 1]", ns)
	}
	if _, ok, _ := st.Get("skills.versions", contentKey(2)); ok { // a's version 2 had key 2
		t.Fatal("dropped version's content still stored")
	}
}

func TestMaxBytesEvictsOldestAnywhere(t *testing.T) {
	h, _ := newMem(t, Config{MaxBytes: 10})
	mustRecord(t, h, "a", "aaaa") // a@1
	mustRecord(t, h, "b", "bbbb") // b@1
	mustRecord(t, h, "a", "AAAA") // a@2: 12 bytes, a@1 goes
	if _, err := h.Content("a", 1); err == nil {
		t.Fatal("a@1 kept beyond the byte bound")
	}
	if _, err := h.Content("b", 1); err != nil {
		t.Fatal("b@1 is b's newest and must stay:", err)
	}
}

func TestUnregisterKeepsNumberingAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := New(kv.Local(st), Config{Scope: "skills", Noun: "skill"})
	mustRecord(t, h, "a", "one")
	mustRecord(t, h, "a", "two")
	_ = st.Close()
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h = New(kv.Local(st), Config{Scope: "skills", Noun: "skill"})
	if v, c := mustRecord(t, h, "a", "three"); !c || v.Version != 3 {
		t.Fatalf("after reopen: %+v", v)
	}
}

func TestRepairSettlesHalfWrittenVersion(t *testing.T) {
	h, st := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	mustRecord(t, h, "a", "two")
	// A crash after the head was written but before the content row.
	if _, _, err := st.Delete("skills.versions", keyOf(h, "a", 2)); err != nil {
		t.Fatal(err)
	}
	// The served row holds "one": version 2 is forgotten, nothing new.
	if err := h.Repair("a", "recorded at start-up", func() (string, bool) { return "one", true }); err != nil {
		t.Fatal(err)
	}
	if h.Latest("a") != 1 {
		t.Fatalf("latest %d after repair", h.Latest("a"))
	}
	// Served content that history lacks (written, then a crash): recorded.
	if err := h.Repair("a", "recorded at start-up", func() (string, bool) { return "three", true }); err != nil {
		t.Fatal(err)
	}
	if c, _, err := h.Select("a", "latest"); err != nil || c != "three" {
		t.Fatalf("latest after repair: %q %v", c, err)
	}
}

func TestUnifiedDiff(t *testing.T) {
	// Same as GNU diff -u.
	a := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n"
	b := "l1\nl2\nl3\nL4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\n"
	want := "--- a@1\n+++ a@2\n@@ -1,7 +1,7 @@\n l1\n l2\n l3\n-l4\n+L4\n l5\n l6\n l7\n@@ -10,3 +10,4 @@\n l10\n l11\n l12\n+l13\n"
	if got := Unified("a@1", "a@2", a, b); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if Unified("x", "y", "same", "same") != "" {
		t.Fatal("equal inputs differ")
	}
	got := Unified("x", "y", "a", "b")
	if got != "--- x\n+++ y\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n" {
		t.Fatalf("no newline:\n%s", got)
	}
	got = Unified("x", "y", "", "new\n")
	if got != "--- x\n+++ y\n@@ -0,0 +1 @@\n+new\n" {
		t.Fatalf("from empty:\n%s", got)
	}
}

func TestMyersMatchesShortestScript(t *testing.T) {
	x := splitLines("a\nb\nc\na\nb\nb\na\n")
	y := splitLines("c\nb\na\nb\na\nc\n")
	ops := diffLines(x, y)
	var edits int
	var ra, rb []string
	for _, o := range ops {
		if o.kind != ' ' {
			edits++
		}
		if o.kind != '+' {
			ra = append(ra, o.text)
		}
		if o.kind != '-' {
			rb = append(rb, o.text)
		}
	}
	if edits != 5 || strings.Join(ra, "") != strings.Join(x, "") || strings.Join(rb, "") != strings.Join(y, "") {
		t.Fatalf("edits %d (want 5), script %+v", edits, ops)
	}
}

// keyOf is the content key of version n of id.
func keyOf(h *History, id string, n int) string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, k := range h.sums[id].kept {
		if int(k.n) == n {
			return contentKey(k.key)
		}
	}
	return ""
}

func TestContentKeysSortInWriteOrder(t *testing.T) {
	for _, pair := range [][2]uint64{{1, 2}, {15, 16}, {255, 256}, {1 << 40, 1<<40 + 1}} {
		if a, b := contentKey(pair[0]), contentKey(pair[1]); a >= b || len(a) != 16 {
			t.Fatalf("contentKey(%d)=%s, contentKey(%d)=%s", pair[0], a, pair[1], b)
		}
	}
}

func TestLabelsPerIDAreBounded(t *testing.T) {
	h, _ := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	for i := range MaxLabels {
		if _, err := h.Label("a", "l"+strings.Repeat("x", i), 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Label("a", "one-too-many", 1, ""); err == nil || !strings.Contains(err.Error(), "already has 32 labels") {
		t.Fatalf("label %d: %v", MaxLabels+1, err)
	}
	if _, err := h.Label("a", "l", 1, ""); err != nil { // moving an existing one is fine
		t.Fatal(err)
	}
}

func TestContentOfReadsEveryEscapeBack(t *testing.T) {
	body := "# T\n\ttab \"quoted\" back\\slash \u2028 \x01 ünïcode 😀 \xff end"
	v := Version{Version: 3, RegisteredAt: "x", SHA256: "ab"}
	raw := encodeContentRow("a/b", v, body)
	want := strings.ToValidUTF8(body, "\uFFFD")
	if got, _, ok := contentOf(raw, "a/b", 3); !ok || got != want {
		t.Fatalf("contentOf = %q %v, want %q", got, ok, want)
	}
	if _, _, ok := contentOf(raw, "a/b", 4); ok {
		t.Fatal("a row of another version accepted")
	}
	if _, _, ok := contentOf([]byte(`{"id":"a/b"`), "a/b", 3); ok {
		t.Fatal("a truncated row accepted")
	}
}

// encodeHead and parseHead agree: every field of a head survives the
// round trip, and a head of the format before reads as the same versions.
func TestEncodeHeadRoundTrips(t *testing.T) {
	for _, hd := range []*head{
		{ID: "a", Seq: 0},
		{ID: "a/b", Seq: 5, Deprecated: "use a/c", Versions: []headVersion{{N: 1, Key: 7, Bytes: 10, At: -1, SHA256: strings.Repeat("a", 64)},
			{N: 3, Key: 1<<63 + 5, Bytes: 0, At: 1764100000000000000, SHA256: strings.Repeat("b", 64), SignedBy: "alice@example.com", KeyFP: "SHA256:x/y+z"}},
			Labels: map[string]int{"zeta": 1, "alpha": 3}, Yanked: map[int]string{1: "broken \"quote\" é"}},
		{ID: "x\"<&>\u2028é", Seq: 1, Labels: map[string]int{"prod.v2": 1}, Versions: []headVersion{{N: 1, Key: 1}}},
	} {
		raw := encodeHead(hd)
		back, err := parseHead(raw)
		if err != nil {
			t.Fatalf("encodeHead(%+v) = %s does not decode: %v", hd, raw, err)
		}
		if string(encodeHead(back)) != string(raw) {
			t.Fatalf("round trip:\n%s\n%s", raw, encodeHead(back))
		}
		if back.ID != hd.ID || back.Seq != max(hd.Seq, hd.latest()) || len(back.Versions) != len(hd.Versions) || back.Deprecated != hd.Deprecated {
			t.Fatalf("parseHead(%s) = %+v", raw, back)
		}
	}
	legacy := `{"id":"a","latest":3,"sha256":"` + strings.Repeat("c", 64) + `","labels":{"stable":1},"versions":[{"n":1,"key":18446744073709551615,"bytes":4,"at":5},{"n":3,"key":9,"bytes":2,"at":6}]}`
	hd, err := parseHead(json.RawMessage(legacy))
	if err != nil || !hd.legacy || hd.Seq != 3 || len(hd.Versions) != 2 || hd.Versions[0].Key != 1<<64-1 ||
		hd.Versions[1].SHA256 != strings.Repeat("c", 64) || hd.Versions[0].SHA256 != "" || hd.Labels["stable"] != 1 {
		t.Fatalf("legacy head: %+v %v", hd, err)
	}
	for _, bad := range []string{`[]`, `{"id":1}`, `{"id":"a","v1":"x"}`, `{"id":"a","v1":{"row":"zz"}}`, `{"id":"a","labels":[1]}`} {
		if _, err := parseHead(json.RawMessage(bad)); err == nil {
			t.Errorf("parseHead(%s) accepted", bad)
		}
	}
}

// Record stores the served row with every record of a new version
// (content, head, and the removal of versions retention drops) in one
// commit of the store; labelled versions stay.
func TestRecordCommitsOnce(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	counted := &countingStore{Store: kv.Local(st)}
	h := New(counted, Config{Scope: "skills", Noun: "skill", Retain: 2})
	record := func(content string) Version {
		t.Helper()
		serve := func(c string, _ Version) ([]kv.Write, func()) {
			return []kv.Write{{Scope: "skills", Key: "a", Value: json.RawMessage(`"` + c + `"`)}}, nil
		}
		v, _, err := h.Record("a", content, Meta{}, serve)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := st.Get("skills", "a"); string(got) != `"`+content+`"` {
			t.Fatalf("served row %s after recording %q", got, content)
		}
		return v
	}
	record("one")
	if _, err := h.Label("a", "stable", 1, ""); err != nil {
		t.Fatal(err)
	}
	counted.commits = 0
	for _, c := range []string{"two", "three", "four"} {
		record(c)
	}
	if counted.commits != 3 {
		t.Fatalf("%d commits for 3 new versions; want one each", counted.commits)
	}
	if v := record("four"); v.Version != 4 || counted.commits != 4 {
		t.Fatalf("unchanged content: %+v after %d commits", v, counted.commits)
	}
	keys, err := st.Keys("skills.versions")
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.Versions("a")
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	for _, v := range l.Versions {
		kept = append(kept, v.Version)
	}
	// Retain 2 plus the labelled version 1; version 2's row went with version 4's commit.
	if len(keys) != 3 || fmt.Sprint(kept) != "[4 3 1]" {
		t.Fatalf("content rows %v, versions %v; want 3 rows, [4 3 1]", keys, kept)
	}
	// The head rebuilt from memory is the stored one.
	stored, err := h.getHead("a")
	if err != nil {
		t.Fatal(err)
	}
	h.mu.RLock()
	rebuilt := h.sums["a"].head("a")
	h.mu.RUnlock()
	if string(encodeHead(stored)) != string(encodeHead(rebuilt)) {
		t.Fatalf("head in memory %s, stored %s", encodeHead(rebuilt), encodeHead(stored))
	}
}
