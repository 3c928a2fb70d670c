package skillsext_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/skillsext"
)

// TestRemoteReadStartsOver: a file that changes between two chunks is read
// again from its start, and one that keeps changing fails with an error
// that says so. A stand-in registry serves skills::catalog-file and swaps
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
			// The wire message skillsext.Register answers with.
			return nil, errors.New("the file changed since its first chunk was read (sha256 " + in.SHA256 + ", now " + version + ")")
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
	eventually(t, func() bool { _, err := r.ReadFile(ctx, "s", "f.md"); return err == nil }, "skills::catalog-file registered")

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
