package worker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// TestRemoteCatalog reads the registry's catalog through its functions
// (skills::catalog-*) over a real engine, as core.Remote does for
// `skills mcp`: a file larger than one chunk arrives whole, a listing too
// large for one answer is split without losing a skill, changes arrive as
// events.
func TestRemoteCatalog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startStack(t, t.TempDir())
	src, err := s.reg.Catalog().AddSource("test", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xff, 0x00, 'a'}, 3<<20) // 9 MiB, not UTF-8
	skills := []*catalog.Entry{folder(t, "big", file("SKILL.md", "---\nname: big\ndescription: d\n---\n"),
		catalog.NewFile("data.bin", big, time.Time{}, nil))}
	for i := range 80 {
		files := []catalog.File{file("SKILL.md", fmt.Sprintf("---\nname: many-%02d\ndescription: d\n---\n", i))}
		for j := range 400 {
			files = append(files, file(fmt.Sprintf("refs/file-with-a-long-name-%04d.md", j), "x"))
		}
		skills = append(skills, folder(t, fmt.Sprintf("many-%02d", i), files...))
	}
	if err := src.Put(skills...); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "skills in the view", func() bool { all, _, _ := s.reg.CatalogSkills(ctx, "", 0); return len(all) == 81 })

	cli := s.caller
	r := core.NewRemote(cli, core.RemoteOptions{Logger: quiet})

	got, err := r.CatalogFile(ctx, "big", "data.bin")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("9 MiB file over iii: %d bytes, err %v", len(got), err)
	}
	if _, err := r.CatalogFile(ctx, "big", "nope"); !errors.Is(err, skillsext.ErrNoSuchFile) {
		t.Fatalf("unknown file: %v", err)
	}
	first, more, err := r.CatalogSkills(ctx, "", 0)
	if err != nil || !more || len(first) == 0 || len(first) >= 81 {
		t.Fatalf("a listing over the answer budget is split: %d skills, more=%v, err %v", len(first), more, err)
	}
	all := first
	for more {
		var page []skillsext.Skill
		page, more, err = r.CatalogSkills(ctx, all[len(all)-1].Path, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
	}
	if len(all) != 81 {
		t.Fatalf("walked %d skills, want 81", len(all))
	}
	// A reader asking for a smaller budget gets one skill per answer.
	paged := core.NewRemote(cli, core.RemoteOptions{PageBytes: 1, Logger: quiet})
	if page, more, err := paged.CatalogSkills(ctx, "many-10", 0); err != nil || !more || len(page) != 1 || page[0].Path != "many-11" {
		t.Fatalf("PageBytes 1: %d skills, more=%v, err %v", len(page), more, err)
	}
	if s, ok, err := r.CatalogSkill(ctx, "many-07"); err != nil || !ok || len(s.Files) != 401 {
		t.Fatalf("skill many-07: ok=%v err=%v files=%d", ok, err, len(s.Files))
	}

	// A file edited between two chunks is not stitched from two versions:
	// the next chunk names the version of the first and is refused, and a
	// reader starts over.
	edit := func(content string) {
		t.Helper()
		if err := src.Put(folder(t, "edit", file("SKILL.md", "---\nname: edit\ndescription: d\n---\n"), file("notes.md", content))); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "edit in the view", func() bool { b, _ := s.reg.CatalogFile(ctx, "edit", "notes.md"); return string(b) == content })
	}
	edit("first version of the notes")
	chunk := func(offset int64, sha string) (map[string]any, error) {
		in, _ := json.Marshal(map[string]any{"path": "edit", "file": "notes.md", "offset": offset, "sha256": sha, "max_bytes": 5})
		raw, err := cli.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnCatalogFile, Data: in, Timeout: 5 * time.Second})
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out, err
	}
	head, err := chunk(0, "")
	if err != nil || head["sha256"] == "" || head["size"] != float64(len("first version of the notes")) {
		t.Fatalf("first chunk: %v, err %v", head, err)
	}
	edit("second, longer version of the notes")
	_, err = chunk(5, head["sha256"].(string))
	if err == nil || !strings.Contains(err.Error(), "changed since its first chunk") {
		t.Fatalf("a chunk of a version that is gone: err %v", err)
	}
	wantCode(t, err, core.CodeFileChanged)
	_, err = chunk(1<<20, "")
	wantCode(t, err, rules.CodeInvalidArguments)
	in, _ := json.Marshal(map[string]any{"path": "edit", "file": "nope.md"})
	_, err = cli.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnCatalogFile, Data: in, Timeout: 5 * time.Second})
	wantCode(t, err, rules.CodeNotFound)
	_, err = cli.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnCatalogFile, Data: json.RawMessage(`{"path":5}`), Timeout: 5 * time.Second})
	wantCode(t, err, rules.CodeInvalidArguments)
	small := core.NewRemote(cli, core.RemoteOptions{ChunkBytes: 5, Logger: quiet})
	if got, err := small.CatalogFile(ctx, "edit", "notes.md"); err != nil || string(got) != "second, longer version of the notes" {
		t.Fatalf("5-byte chunks: %q, err %v", got, err)
	}

	changed := make(chan string, 4)
	stop, err := r.Watch(ctx, func(c core.Change) {
		if c.Kind == core.ChangeCatalog {
			changed <- c.ID
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	testutil.Eventually(t, 5*time.Second, "skills::catalog-on-change reaches the remote reader", func() bool {
		src.Remove("big")
		select {
		case p := <-changed:
			return p == "big"
		case <-time.After(200 * time.Millisecond):
			_ = src.Put(skills[0])
			return false
		}
	})
}

// TestRemoteReadStartsOver: a file that changes between two chunks is read
// again from its start, and one that keeps changing fails with an error
// that says so. Remote tells the change by its code, FILE_CHANGED. A stand-in registry serves skills::catalog-file and swaps
// the file's version right after each first chunk, as an edit would.
func TestRemoteReadStartsOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := startEngine(t)

	versions := []string{"version one of the file", "version two of the file", "version three", "version four"}
	var current atomic.Int32 // index into versions
	var swaps atomic.Int32   // how many more first chunks swap the version
	reg := iii.RegisterWorker(eng.URL(), iii.WithName("stand-in-registry"), iii.WithLogger(quiet))
	defer reg.Close()
	if _, err := reg.RegisterFunction(rules.FnCatalogFile, func(_ context.Context, data json.RawMessage) (any, error) {
		var in struct {
			Offset   int64  `json:"offset"`
			SHA256   string `json:"sha256"`
			MaxBytes int    `json:"max_bytes"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, err
		}
		i := current.Load()
		version := "v" + string(rune('0'+i))
		if in.SHA256 != "" && in.SHA256 != version {
			// Remote decides by the code: the text is not ours to match.
			return nil, iii.NewInvocationError(core.CodeFileChanged, "version "+in.SHA256+" is gone, now "+version)
		}
		b := versions[i]
		chunk := b[in.Offset:min(int64(len(b)), in.Offset+int64(in.MaxBytes))]
		if in.Offset == 0 && swaps.Add(-1) >= 0 {
			current.Store((i + 1) % int32(len(versions)))
		}
		return map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(chunk)), "size": len(b), "sha256": version}, nil
	}); err != nil {
		t.Fatal(err)
	}
	cli := iii.RegisterWorker(eng.URL(), iii.WithName("reader"), iii.WithLogger(quiet))
	defer cli.Close()
	connectAll(t, reg, cli)
	r := core.NewRemote(cli, core.RemoteOptions{ChunkBytes: 4, Logger: quiet})
	testutil.Eventually(t, 5*time.Second, "skills::catalog-file registered", func() bool { _, err := r.CatalogFile(ctx, "s", "f.md"); return err == nil })

	// One edit during the read: the second attempt returns the new version whole.
	current.Store(0)
	swaps.Store(1)
	if got, err := r.CatalogFile(ctx, "s", "f.md"); err != nil || string(got) != versions[1] {
		t.Fatalf("after one edit between chunks: %q, err %v (want %q)", got, err, versions[1])
	}
	// An edit during every attempt: a clear error, not a stitched file.
	swaps.Store(100)
	got, err := r.CatalogFile(ctx, "s", "f.md")
	if err == nil || !strings.Contains(err.Error(), "changed while it was read, 3 times in a row") {
		t.Fatalf("a file edited during every read: %q, err %v", got, err)
	}
}

// TestRemoteDecidesByCode: skills::catalog-file answers an unknown file
// NOT_FOUND, a bad offset INVALID_ARGUMENTS and a gone version
// FILE_CHANGED, and Remote reads the code, not the text: a stand-in that
// says "no such skill file" with the generic code is a failure, and one
// that says anything with NOT_FOUND is ErrNoSuchFile.
func TestRemoteDecidesByCode(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t)
	var code atomic.Value
	reg := iii.RegisterWorker(eng.URL(), iii.WithName("stand-in-registry"), iii.WithLogger(quiet))
	defer reg.Close()
	if _, err := reg.RegisterFunction(rules.FnCatalogFile, func(context.Context, json.RawMessage) (any, error) {
		if c := code.Load().(string); c != "" {
			return nil, iii.NewInvocationError(c, "nothing here")
		}
		return nil, errors.New("no such skill file") // invocation_failed
	}); err != nil {
		t.Fatal(err)
	}
	cli := iii.RegisterWorker(eng.URL(), iii.WithName("reader"), iii.WithLogger(quiet))
	defer cli.Close()
	connectAll(t, reg, cli)
	r := core.NewRemote(cli, core.RemoteOptions{Logger: quiet})
	code.Store(rules.CodeNotFound)
	testutil.Eventually(t, 5*time.Second, "NOT_FOUND read as ErrNoSuchFile", func() bool { _, err := r.CatalogFile(ctx, "s", "f.md"); return errors.Is(err, skillsext.ErrNoSuchFile) })
	code.Store("")
	_, err := r.CatalogFile(ctx, "s", "f.md")
	var inv *iii.InvocationError
	if errors.Is(err, skillsext.ErrNoSuchFile) || !errors.As(err, &inv) || inv.Code != iii.CodeInvocationFailed {
		t.Fatalf("the text without the code: err %v, want the invocation_failed error itself", err)
	}
}

// startEngine starts an embedded engine on a free port for the test.
func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// connectAll connects each client (10 s at most each).
func connectAll(t *testing.T, clients ...*iii.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Connect(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func folder(t *testing.T, id string, files ...catalog.File) *catalog.Entry {
	t.Helper()
	e := &catalog.Entry{ID: id, Files: files, Origin: catalog.Origin{Kind: catalog.OriginFolder}}
	if md, ok := e.File("SKILL.md"); ok {
		s, _ := md.Content.String()
		raw, body, _ := catalog.SplitFrontmatter(s)
		fm, err := catalog.ParseFrontmatter(raw)
		if err != nil {
			t.Fatal(err)
		}
		e.Frontmatter, e.Body = fm, catalog.Inline(body)
	}
	return e
}

func file(p, content string) catalog.File {
	return catalog.NewFile(p, []byte(content), time.Time{}, nil)
}
