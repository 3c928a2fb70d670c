package history

import (
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Record makes content id's next version unless it is the newest one
// already, and stores served (the caller's own writes: the row a read
// serves) in the same commit: on a store with transactions the content
// row, the head, the removal of versions retention drops and served become
// durable together, or none does. done, when set, runs after the commit
// with id's lock still held (the caller's in-memory copy then follows the
// store in write order). It returns the version content now is and whether
// it was created.
func (h *History) Record(id, content string, meta Meta, served []kv.Write, done func()) (Version, bool, error) {
	if err := h.load(); err != nil {
		return Version{}, false, err
	}
	unlock := h.lock(id)
	v, created, err := h.recordLocked(id, content, meta, served, done)
	unlock()
	if err == nil && created {
		h.evict()
	}
	return v, created, err
}

func (h *History) recordLocked(id, content string, meta Meta, served []kv.Write, done func()) (Version, bool, error) {
	digest := Digest(content)
	h.mu.RLock()
	s := h.sums[id]
	h.mu.RUnlock()
	if s != nil && s.digest == digest {
		if len(served) > 0 {
			if _, err := h.st.Commit(ctx(), served...); err != nil {
				return Version{}, false, err
			}
		}
		if done != nil {
			done()
		}
		return Version{Version: s.latest, SHA256: hex.EncodeToString(digest[:])}, false, nil
	}
	var hd *head
	switch {
	case !h.st.Shared() && s != nil:
		// Nobody else writes this store, every head was loaded into a
		// summary, and heads change only under the id's lock (held): the
		// summary is the head, without a read and a decode of up to
		// Retain versions.
		hd = s.head(id)
	case h.st.Shared():
		// Another instance may have written a version since.
		var err error
		if hd, err = h.getHead(id); err != nil {
			return Version{}, false, err
		}
	}
	if hd == nil {
		hd = &head{ID: id}
	}
	now := h.cfg.Now()
	v := Version{Version: hd.Latest + 1, RegisteredAt: registry.Timestamp(now), Bytes: len(content),
		SHA256: hex.EncodeToString(digest[:]), Message: meta.Message, Author: meta.Author}
	key := h.nextKey.Add(1) - 1
	hd.Versions = append(hd.Versions, headVersion{N: v.Version, Key: key, Bytes: len(content), At: now.UnixNano()})
	hd.Latest, hd.SHA256 = v.Version, v.SHA256
	dropped := h.retain(hd)
	writes := make([]kv.Write, 0, 2+len(dropped)+len(served))
	writes = append(writes, served...)
	writes = append(writes,
		kv.Write{Scope: h.contents, Key: contentKey(key), Value: encodeContentRow(id, v, content)},
		kv.Write{Scope: h.heads, Key: id, Value: encodeHead(hd)})
	for _, k := range dropped {
		writes = append(writes, kv.Write{Scope: h.contents, Key: contentKey(k), Delete: true})
	}
	if _, err := h.st.Commit(ctx(), writes...); err != nil {
		return Version{}, false, fmt.Errorf("record version %d of %s %s: %w", v.Version, h.cfg.Noun, id, err)
	}
	for _, k := range dropped {
		h.cache.forget(k)
	}
	h.setSummary(id, summaryOf(hd))
	if done != nil {
		done()
	}
	return v, true, nil
}

// retain drops the versions older than the last Retain that no label
// holds, and returns their content keys.
func (h *History) retain(hd *head) []uint64 {
	cut := len(hd.Versions) - h.cfg.Retain // versions before cut may go
	if cut <= 0 {
		return nil
	}
	var dropped []uint64
	out := hd.Versions[:0]
	for i, v := range hd.Versions {
		if i < cut && v.N != hd.Latest && !labelled(hd.Labels, v.N) {
			dropped = append(dropped, v.Key)
			continue
		}
		out = append(out, v)
	}
	hd.Versions = out
	return dropped
}

func labelled(labels map[string]int, n int) bool {
	for _, v := range labels {
		if v == n {
			return true
		}
	}
	return false
}

// evict drops the oldest unlabelled, not-newest versions of any id while
// the history holds more than MaxBytes.
func (h *History) evict() {
	for {
		h.mu.RLock()
		over := h.total > h.cfg.MaxBytes
		var victim string
		var vn int32
		var vat int64
		if over {
			for id, s := range h.sums {
				for _, k := range s.kept {
					if int(k.n) == s.latest || labelled(s.labels, int(k.n)) {
						continue
					}
					if victim == "" || k.at < vat {
						victim, vn, vat = id, k.n, k.at
					}
					break // kept is oldest first
				}
			}
		}
		h.mu.RUnlock()
		if victim == "" {
			return
		}
		if !h.drop(victim, int(vn)) {
			return
		}
	}
}

// drop removes version n of id from its history; false when nothing changed.
func (h *History) drop(id string, n int) bool {
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil || hd == nil {
		return false
	}
	i := slices.IndexFunc(hd.Versions, func(v headVersion) bool { return v.N == n })
	if i < 0 || n == hd.Latest || labelled(hd.Labels, n) {
		return false
	}
	key := hd.Versions[i].Key
	hd.Versions = slices.Delete(hd.Versions, i, i+1)
	// The head first: a leftover content row is harmless, a head naming
	// a missing row is not.
	if h.putHead(hd) != nil {
		return false
	}
	_, _ = h.st.Commit(ctx(), kv.Write{Scope: h.contents, Key: contentKey(key), Delete: true})
	h.cache.forget(key)
	h.setSummary(id, summaryOf(hd))
	return true
}
