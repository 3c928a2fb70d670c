package skillsext_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// startEngine starts an embedded engine on a free port for the test, and
// returns it with a logger that discards.
func startEngine(t *testing.T) (*engine.Engine, *slog.Logger) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng, quiet
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

// TestRemote reads a View published over a real engine: a file larger than
// one chunk arrives whole, a listing too large for one answer is split
// without losing a skill, changes arrive as events.
func TestRemote(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, quiet := startEngine(t)

	v, src := newView(t)
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
	testutil.Eventually(t, 5*time.Second, "skills in the view", func() bool { all, _, _ := v.ListSkills(ctx, "", 0); return len(all) == 81 })

	reg := iii.RegisterWorker(eng.URL(), iii.WithName("registry"), iii.WithLogger(quiet))
	defer reg.Close()
	if err := skillsext.Register(ctx, reg, v, quiet); err != nil {
		t.Fatal(err)
	}
	cli := iii.RegisterWorker(eng.URL(), iii.WithName("reader"), iii.WithLogger(quiet))
	defer cli.Close()
	connectAll(t, reg, cli)
	r := &skillsext.Remote{Client: cli}
	// The registry's functions are in place once a listing answers (an
	// unknown function reads as an empty catalog).
	testutil.Eventually(t, 5*time.Second, "skills::catalog-list registered", func() bool { s, _, err := r.ListSkills(ctx, "", 1); return err == nil && len(s) == 1 })

	got, err := r.ReadFile(ctx, "big", "data.bin")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("9 MiB file over iii: %d bytes, err %v", len(got), err)
	}
	if _, err := r.ReadFile(ctx, "big", "nope"); !errors.Is(err, skillsext.ErrNoSuchFile) {
		t.Fatalf("unknown file: %v", err)
	}
	first, more, err := r.ListSkills(ctx, "", 0)
	if err != nil || !more || len(first) == 0 || len(first) >= 81 {
		t.Fatalf("a listing over the answer budget is split: %d skills, more=%v, err %v", len(first), more, err)
	}
	all := first
	for more {
		var page []skillsext.Skill
		page, more, err = r.ListSkills(ctx, all[len(all)-1].Path, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
	}
	if len(all) != 81 {
		t.Fatalf("walked %d skills, want 81", len(all))
	}
	// A reader asking for a smaller budget gets one skill per answer.
	paged := &skillsext.Remote{Client: cli, PageBytes: 1}
	if page, more, err := paged.ListSkills(ctx, "many-10", 0); err != nil || !more || len(page) != 1 || page[0].Path != "many-11" {
		t.Fatalf("PageBytes 1: %d skills, more=%v, err %v", len(page), more, err)
	}
	if s, ok, err := r.Skill(ctx, "many-07"); err != nil || !ok || len(s.Files) != 401 {
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
		testutil.Eventually(t, 5*time.Second, "edit in the view", func() bool { b, _ := v.ReadFile(ctx, "edit", "notes.md"); return string(b) == content })
	}
	edit("first version of the notes")
	chunk := func(offset int64, sha string) (map[string]any, error) {
		in, _ := json.Marshal(map[string]any{"path": "edit", "file": "notes.md", "offset": offset, "sha256": sha, "max_bytes": 5})
		raw, err := cli.Trigger(ctx, iii.TriggerRequest{FunctionID: skillsext.FnCatalogFile, Data: in, Timeout: 5 * time.Second})
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
	wantCode(t, err, skillsext.CodeFileChanged)
	_, err = chunk(1<<20, "")
	wantCode(t, err, rules.CodeInvalidArguments)
	in, _ := json.Marshal(map[string]any{"path": "edit", "file": "nope.md"})
	_, err = cli.Trigger(ctx, iii.TriggerRequest{FunctionID: skillsext.FnCatalogFile, Data: in, Timeout: 5 * time.Second})
	wantCode(t, err, rules.CodeNotFound)
	_, err = cli.Trigger(ctx, iii.TriggerRequest{FunctionID: skillsext.FnCatalogFile, Data: json.RawMessage(`{"path":5}`), Timeout: 5 * time.Second})
	wantCode(t, err, rules.CodeInvalidArguments)
	small := &skillsext.Remote{Client: cli, ChunkBytes: 5}
	if got, err := small.ReadFile(ctx, "edit", "notes.md"); err != nil || string(got) != "second, longer version of the notes" {
		t.Fatalf("5-byte chunks: %q, err %v", got, err)
	}

	changed := make(chan string, 4)
	stop, err := r.Watch(ctx, func(p string) { changed <- p })
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

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var inv *iii.InvocationError
	if !errors.As(err, &inv) || inv.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}
