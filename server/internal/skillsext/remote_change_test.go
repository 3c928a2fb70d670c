package skillsext_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// TestRemoteReadStartsOver: a file that changes between two chunks is read
// again from its start, and one that keeps changing fails with an error
// that says so. Remote tells the change by its code, FILE_CHANGED. A stand-in registry serves skills::catalog-file and swaps
// the file's version right after each first chunk, as an edit would.
func TestRemoteReadStartsOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, quiet := startEngine(t)

	versions := []string{"version one of the file", "version two of the file", "version three", "version four"}
	var current atomic.Int32 // index into versions
	var swaps atomic.Int32   // how many more first chunks swap the version
	reg := iii.RegisterWorker(eng.URL(), iii.WithName("stand-in-registry"), iii.WithLogger(quiet))
	defer reg.Close()
	if _, err := reg.RegisterFunction(skillsext.FnCatalogFile, func(_ context.Context, data json.RawMessage) (any, error) {
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
			return nil, iii.NewInvocationError(skillsext.CodeFileChanged, "version "+in.SHA256+" is gone, now "+version)
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
	r := &skillsext.Remote{Client: cli, ChunkBytes: 4}
	testutil.Eventually(t, 5*time.Second, "skills::catalog-file registered", func() bool { _, err := r.ReadFile(ctx, "s", "f.md"); return err == nil })

	// One edit during the read: the second attempt returns the new version whole.
	current.Store(0)
	swaps.Store(1)
	if got, err := r.ReadFile(ctx, "s", "f.md"); err != nil || string(got) != versions[1] {
		t.Fatalf("after one edit between chunks: %q, err %v (want %q)", got, err, versions[1])
	}
	// An edit during every attempt: a clear error, not a stitched file.
	swaps.Store(100)
	got, err := r.ReadFile(ctx, "s", "f.md")
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
	eng, quiet := startEngine(t)
	var code atomic.Value
	reg := iii.RegisterWorker(eng.URL(), iii.WithName("stand-in-registry"), iii.WithLogger(quiet))
	defer reg.Close()
	if _, err := reg.RegisterFunction(skillsext.FnCatalogFile, func(context.Context, json.RawMessage) (any, error) {
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
	r := &skillsext.Remote{Client: cli}
	code.Store(rules.CodeNotFound)
	testutil.Eventually(t, 5*time.Second, "NOT_FOUND read as ErrNoSuchFile", func() bool { _, err := r.ReadFile(ctx, "s", "f.md"); return errors.Is(err, skillsext.ErrNoSuchFile) })
	code.Store("")
	_, err := r.ReadFile(ctx, "s", "f.md")
	var inv *iii.InvocationError
	if errors.Is(err, skillsext.ErrNoSuchFile) || !errors.As(err, &inv) || inv.Code != iii.CodeInvocationFailed {
		t.Fatalf("the text without the code: err %v, want the invocation_failed error itself", err)
	}
}
