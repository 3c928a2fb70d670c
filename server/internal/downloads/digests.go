package downloads

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/iii-skills/skills/server/internal/skillarchive"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// artifact is an archive's digest and size. The writer is deterministic,
// so they follow from what the archive holds: the skill's content digest,
// its name (the top folder of the wrapped layout), the layout and the
// format.
type artifact struct {
	sum  [sha256.Size]byte
	size int64
}

type artifactKey struct {
	content, name string
	layout        skillarchive.Layout
	format        format
}

// digests keeps the artifacts of the archives written, at most max of
// them (the oldest goes first), and computes each once however many
// requests want it at the same time.
type digests struct {
	max   int
	mu    sync.Mutex
	known map[artifactKey]artifact
	order []artifactKey // insertion order, for eviction
	group singleflight.Group
}

func newDigests(max int) *digests {
	return &digests{max: max, known: map[artifactKey]artifact{}}
}

// of returns the artifact of s's archive, computing it with compute when
// it is not known. Skills without a content digest are never kept.
func (d *digests) of(ctx context.Context, s skillsext.Skill, layout skillarchive.Layout, f format, compute func() (artifact, error)) (artifact, error) {
	if s.SHA256 == "" {
		return compute()
	}
	key := artifactKey{content: s.SHA256, name: s.Name, layout: layout, format: f}
	d.mu.Lock()
	a, ok := d.known[key]
	d.mu.Unlock()
	if ok {
		return a, nil
	}
	ch := d.group.DoChan(fmt.Sprintf("%s\x00%s\x00%d\x00%d", key.content, key.name, key.layout, key.format), func() (any, error) {
		a, err := compute()
		if err == nil {
			d.put(key, a)
		}
		return a, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return artifact{}, r.Err
		}
		return r.Val.(artifact), nil
	case <-ctx.Done():
		return artifact{}, ctx.Err()
	}
}

func (d *digests) put(key artifactKey, a artifact) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.known[key]; ok {
		return
	}
	if len(d.order) >= d.max {
		delete(d.known, d.order[0])
		d.order = d.order[1:]
	}
	d.known[key] = a
	d.order = append(d.order, key)
}

// hashWriter counts and hashes what is written to it.
type hashWriter struct {
	h hash.Hash
	n int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}
