package catalog_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

func entry(id, version, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Version: version, Kind: catalog.KindInstruction, Body: catalog.Inline(body)}
	e.SetSummary(body)
	return e
}

func mustSource(t *testing.T, c *catalog.Catalog, name string, rank int) *catalog.Source {
	t.Helper()
	s, err := c.AddSource(name, rank)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func body(t *testing.T, e *catalog.Entry) string {
	t.Helper()
	s, err := e.Body.String()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder collects changes delivered to a subscriber.
type recorder struct {
	ch chan catalog.Change
}

func subscribe(t *testing.T, c *catalog.Catalog) *recorder {
	r := &recorder{ch: make(chan catalog.Change, 1024)}
	cancel := c.Subscribe(func(ch catalog.Change) { r.ch <- ch })
	t.Cleanup(cancel)
	return r
}

func (r *recorder) next(t *testing.T) catalog.Change {
	t.Helper()
	select {
	case ch := <-r.ch:
		return ch
	case <-time.After(5 * time.Second):
		t.Fatal("no change delivered")
		return catalog.Change{}
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case ch := <-r.ch:
		t.Fatalf("unexpected change %s %s (cause %s)", ch.Op, ch.ID, ch.Cause)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestPrecedence(t *testing.T) {
	c := catalog.New()
	builtin := mustSource(t, c, "builtin", catalog.RankBuiltin)
	f2 := mustSource(t, c, "folder:b", catalog.RankFolder+1)
	f1 := mustSource(t, c, "folder:a", catalog.RankFolder)
	pub := mustSource(t, c, "published", catalog.RankPublished)
	rec := subscribe(t, c)

	must(t, builtin.Put(entry("x", "", "builtin")))
	if ch := rec.next(t); ch.Op != catalog.OpPut || ch.ID != "x" || body(t, ch.Entry) != "builtin" || ch.Previous != nil || ch.Cause != "builtin" {
		t.Fatalf("first put: %+v", ch)
	}
	must(t, f2.Put(entry("x", "", "second folder")))
	ch := rec.next(t)
	if body(t, ch.Entry) != "second folder" || body(t, ch.Previous) != "builtin" {
		t.Fatalf("folder over builtin: %+v", ch)
	}
	must(t, f1.Put(entry("x", "", "first folder")))
	if ch := rec.next(t); body(t, ch.Entry) != "first folder" {
		t.Fatalf("earlier folder wins: %+v", ch)
	}
	must(t, pub.Put(entry("x", "", "published")))
	if ch := rec.next(t); body(t, ch.Entry) != "published" || ch.Cause != "published" {
		t.Fatalf("published wins: %+v", ch)
	}
	// A write to a shadowed source changes nothing visible.
	must(t, f2.Put(entry("x", "", "second folder v2")))
	rec.none(t)

	if o, _ := c.Owner("x"); o != "published" {
		t.Fatalf("owner %q", o)
	}
	sh := c.Shadowed()
	var got []string
	for _, s := range sh {
		got = append(got, s.Source+"<"+s.By)
	}
	if strings.Join(got, ",") != "folder:a<published,folder:b<published,builtin<published" {
		t.Fatalf("shadowed %v", got)
	}
	if len(c.ShadowedAt("x")) != 3 || c.ShadowedAt("nope") != nil {
		t.Fatal("ShadowedAt")
	}

	// Removing the owner falls back to the next source.
	pub.Remove("x")
	if ch := rec.next(t); ch.Op != catalog.OpPut || body(t, ch.Entry) != "first folder" || body(t, ch.Previous) != "published" {
		t.Fatalf("fallback: %+v", ch)
	}
	f1.Remove("x")
	f2.Remove("x")
	if ch := rec.next(t); body(t, ch.Entry) != "second folder v2" {
		t.Fatalf("fallback 2: %+v", ch)
	}
	if ch := rec.next(t); body(t, ch.Entry) != "builtin" {
		t.Fatalf("fallback 3: %+v", ch)
	}
	builtin.Remove("x")
	if ch := rec.next(t); ch.Op != catalog.OpRemove || ch.Entry != nil || body(t, ch.Previous) != "builtin" {
		t.Fatalf("remove: %+v", ch)
	}
	if _, ok := c.Get("x"); ok || c.Len() != 0 || len(c.List()) != 0 {
		t.Fatal("x still visible")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestVersions(t *testing.T) {
	c := catalog.New()
	s := mustSource(t, c, "bundles", catalog.RankFolder)
	rec := subscribe(t, c)
	must(t, s.Put(entry("pdf", "1.2.0", "v1.2.0")))
	rec.next(t)
	must(t, s.Put(entry("pdf", "1.10.0", "v1.10.0")))
	if ch := rec.next(t); body(t, ch.Entry) != "v1.10.0" {
		t.Fatalf("semver, not bytewise: %+v", ch)
	}
	// A lower version changes nothing visible.
	must(t, s.Put(entry("pdf", "1.10.0-rc.1", "rc")))
	must(t, s.Put(entry("pdf", "", "unversioned")))
	rec.none(t)
	var vs []string
	for _, e := range c.Versions("pdf") {
		vs = append(vs, e.Version)
	}
	if strings.Join(vs, ",") != "1.10.0,1.10.0-rc.1,1.2.0," {
		t.Fatalf("versions %q", vs)
	}
	if e, ok := c.GetVersion("pdf", "1.2.0"); !ok || body(t, e) != "v1.2.0" {
		t.Fatal("GetVersion")
	}
	if !s.RemoveVersion("pdf", "1.10.0") || s.RemoveVersion("pdf", "9.9.9") {
		t.Fatal("RemoveVersion result")
	}
	if ch := rec.next(t); body(t, ch.Entry) != "rc" {
		t.Fatalf("after removing the highest: %+v", ch)
	}
	if n := len(c.AllVersions()); n != 3 {
		t.Fatalf("AllVersions %d", n)
	}
	if err := s.Put(entry("pdf", "1.2", "x")); err == nil {
		t.Fatal("short version accepted")
	}
	if err := s.Put(entry("pdf", "v1.2.0", "x")); err == nil {
		t.Fatal("v prefix accepted")
	}
}

func TestInvalidEntriesWriteNothing(t *testing.T) {
	c := catalog.New()
	s := mustSource(t, c, "s", 0)
	err := s.Put(entry("good", "", "a"), entry("Bad", "", "b"))
	if err == nil || !strings.Contains(err.Error(), "Bad") {
		t.Fatalf("err %v", err)
	}
	if c.Len() != 0 {
		t.Fatal("partial write")
	}
	if err := s.Replace([]*catalog.Entry{entry("fn/x", "", "a")}); err == nil {
		t.Fatal("reserved fn accepted")
	}
	if _, err := c.AddSource("s", 1); err == nil {
		t.Fatal("duplicate source accepted")
	}
}

func TestListSortedAndSnapshot(t *testing.T) {
	c := catalog.New()
	s := mustSource(t, c, "s", 0)
	must(t, s.Put(entry("a/b", "", "1"), entry("a-x", "", "2"), entry("a", "", "3")))
	l1 := c.List()
	ids := func(l []*catalog.Entry) string {
		var out []string
		for _, e := range l {
			out = append(out, e.ID)
		}
		return strings.Join(out, " ")
	}
	if ids(l1) != "a a-x a/b" {
		t.Fatalf("order %q", ids(l1))
	}
	if &c.List()[0] != &l1[0] {
		t.Fatal("List rebuilt without a change")
	}
	must(t, s.Put(entry("0", "", "4")))
	if ids(l1) != "a a-x a/b" || ids(c.List()) != "0 a a-x a/b" {
		t.Fatal("snapshot changed under a reader")
	}
}

func TestReplaceAndBatchEvents(t *testing.T) {
	c := catalog.New()
	s := mustSource(t, c, "folder", catalog.RankFolder)
	rec := subscribe(t, c)
	var es []*catalog.Entry
	for i := 199; i >= 0; i-- {
		es = append(es, entry(fmt.Sprintf("s%03d", i), "", "x"))
	}
	must(t, s.Replace(es))
	for i := 0; i < 200; i++ {
		if ch := rec.next(t); ch.ID != fmt.Sprintf("s%03d", i) || ch.Generation != uint64(i+1) {
			t.Fatalf("batch event %d: %s gen %d", i, ch.ID, ch.Generation)
		}
	}
	l := c.List()
	if len(l) != 200 || l[0].ID != "s000" || l[199].ID != "s199" {
		t.Fatal("batch list")
	}
	// Same pointers: no event; one changed, one dropped.
	keep := es[1:]
	keep[0] = entry(keep[0].ID, "", "changed")
	must(t, s.Replace(keep))
	a, b := rec.next(t), rec.next(t)
	if a.ID != "s198" || a.Op != catalog.OpPut || b.ID != "s199" || b.Op != catalog.OpRemove {
		t.Fatalf("replace diff %s %s / %s %s", a.Op, a.ID, b.Op, b.ID)
	}
	rec.none(t)
	c.RemoveSource("folder")
	if c.Len() != 0 || c.Source("folder") != nil || len(c.Sources()) != 0 {
		t.Fatal("RemoveSource")
	}
}

func TestSlowSubscriberDoesNotBlockWriters(t *testing.T) {
	c := catalog.New()
	s := mustSource(t, c, "s", 0)
	release := make(chan struct{})
	var got []string
	var mu sync.Mutex
	done := make(chan struct{})
	cancel := c.Subscribe(func(ch catalog.Change) {
		<-release
		mu.Lock()
		got = append(got, ch.ID)
		n := len(got)
		mu.Unlock()
		if n == 100 {
			close(done)
		}
	})
	defer cancel()
	for i := 0; i < 100; i++ {
		must(t, s.Put(entry(fmt.Sprintf("k%03d", i), "", "x")))
	}
	close(release)
	<-done
	for i, id := range got {
		if id != fmt.Sprintf("k%03d", i) {
			t.Fatalf("out of order at %d: %s", i, id)
		}
	}
}

func TestConcurrentReadersAndWriters(t *testing.T) {
	c := catalog.New()
	a := mustSource(t, c, "a", 0)
	b := mustSource(t, c, "b", 1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l := c.List()
				for i := 1; i < len(l); i++ {
					if l[i-1].ID >= l[i].ID {
						panic("unsorted list")
					}
				}
				c.Get("k1")
				c.Shadowed()
			}
		}()
	}
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("k%d", i%50)
		must(t, a.Put(entry(id, "", "a")))
		must(t, b.Put(entry(id, "", "b")))
		if i%3 == 0 {
			a.Remove(id)
		}
	}
	close(stop)
	wg.Wait()
}

func TestLazyContentAndFiles(t *testing.T) {
	calls := 0
	lazy := catalog.Lazy(5, func() ([]byte, error) { calls++; return []byte("hello"), nil })
	if lazy.InMemory() || lazy.Size() != 5 {
		t.Fatal("lazy flags")
	}
	if s, _ := lazy.String(); s != "hello" || calls != 1 {
		t.Fatal("lazy read")
	}
	failing := catalog.Lazy(1, func() ([]byte, error) { return nil, errors.New("gone") })
	if _, err := failing.Bytes(); err == nil {
		t.Fatal("error swallowed")
	}
	e := &catalog.Entry{ID: "pdf", Files: []catalog.File{
		{Path: "SKILL.md", Size: 3}, {Path: "assets/logo.png", Size: 4}, {Path: "scripts/run.py", Size: 5},
	}}
	if f, ok := e.File("assets/logo.png"); !ok || f.Size != 4 {
		t.Fatal("File lookup")
	}
	if _, ok := e.File("assets"); ok {
		t.Fatal("prefix matched")
	}
	if e.TotalSize() != 12 {
		t.Fatal("TotalSize")
	}
}

func TestDigest(t *testing.T) {
	d := catalog.DigestOf([]byte("abc"))
	want := "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if d.String() != want || catalog.DigestOfString("abc") != d {
		t.Fatalf("digest %s", d)
	}
	p, err := catalog.ParseDigest(want)
	if err != nil || p != d {
		t.Fatal("ParseDigest")
	}
	for _, bad := range []string{"abc", "sha256:zz", "md5:" + want[7:], "sha256:" + want[8:]} {
		if _, err := catalog.ParseDigest(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
}

func TestMIMEType(t *testing.T) {
	for p, want := range map[string]string{
		"SKILL.md": "text/markdown", "scripts/run.PY": "text/x-python", "a/logo.png": "image/png",
		"data.bin": "application/octet-stream", "ref.json": "application/json", "noext": "application/octet-stream",
	} {
		if got := catalog.MIMEType(p); got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
	if !catalog.IsText("text/markdown") || catalog.IsText("image/png") || !catalog.IsText("application/json") {
		t.Fatal("IsText")
	}
}

func TestSummaryUntruncated(t *testing.T) {
	long := strings.Repeat("word ", 60)
	e := entry("a", "", "# Title\n\n"+long+"\nsecond line\n\nnext")
	want := strings.TrimSpace(long) + " second line"
	if e.Title != "Title" || e.Description != want {
		t.Fatalf("summary %q / %q", e.Title, e.Description)
	}
	ix := e.IndexEntry()
	if len([]rune(ix.Description)) != 143 || !strings.HasSuffix(ix.Description, "...") {
		t.Fatalf("index description %q", ix.Description)
	}
	if e.DisplayTitle() != "Title" || entry("b", "", "no h1").DisplayTitle() != "b" {
		t.Fatal("DisplayTitle")
	}
}

func TestNewFile(t *testing.T) {
	f := catalog.NewFile("assets/x.png", []byte{0x89, 'P', 'N', 'G'}, time.Time{}, nil)
	if f.MIME != "image/png" || f.Size != 4 || f.Digest != catalog.DigestOf([]byte{0x89, 'P', 'N', 'G'}) || !f.Content.InMemory() {
		t.Fatalf("%+v", f)
	}
	b, _ := f.Content.Bytes()
	if string(b) != "\x89PNG" {
		t.Fatal("content")
	}
	l := catalog.NewFile("big.bin", []byte("abc"), time.Time{}, func() ([]byte, error) { return []byte("abc"), nil })
	if l.Content.InMemory() || l.Content.Size() != 3 {
		t.Fatal("lazy NewFile")
	}
}

func TestHoldersAndMain(t *testing.T) {
	c := catalog.New()
	a := mustSource(t, c, "a", 0)
	b := mustSource(t, c, "b", 1)
	must(t, b.Put(entry("x", "", "b")))
	must(t, a.Put(entry("x", "1.0.0", "a1"), entry("x", "2.0.0", "a2")))
	h := c.Holders("x")
	if len(h) != 2 || body(t, h[0]) != "a2" || body(t, h[1]) != "b" || h[1].SourceName() != "b" {
		t.Fatalf("holders %v", h)
	}
	e := &catalog.Entry{ID: "p", Main: "SKILL.md", Files: []catalog.File{{Path: "SKILL.md", Size: 9}}}
	if f, ok := e.MainFile(); !ok || f.Size != 9 {
		t.Fatal("MainFile")
	}
	if _, ok := (&catalog.Entry{}).MainFile(); ok {
		t.Fatal("MainFile without Main")
	}
}
