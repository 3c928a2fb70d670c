package history

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Serve makes content, version v of an id, what reads of that id serve:
// it returns the writes of the served row (committed with the version's
// records where the store has transactions) and what to run once they are
// durable, with the id's lock held (the caller's in-memory copy then
// follows the store in write order; done may be nil). Record calls it for
// the content recorded, and on shared state possibly for a newer version
// another instance recorded meanwhile (see recordShared).
type Serve func(content string, v Version) (writes []kv.Write, done func())

// Record makes content id's next version unless it is the newest one
// already (same content, same signing key), and has serve (nil: nothing)
// store what reads serve in the same commit: on a store with transactions
// the content row, the head, the removal of versions retention drops and
// the served row become durable together, or none does. It returns the
// version content now is and whether it was created.
//
// On state other registry instances share, the version number comes from
// an atomic increment of the head's seq and the version is added to the
// head as a field of its own (kv.Updater), so two instances recording the
// same id at once each get a version: an acknowledged register never
// vanishes from history.
func (h *History) Record(id, content string, meta Meta, serve Serve) (Version, bool, error) {
	if err := h.load(); err != nil {
		return Version{}, false, err
	}
	unlock := h.lock(id)
	v, created, err := h.recordLocked(id, content, meta, serve)
	unlock()
	if err == nil && created {
		h.evict()
	}
	return v, created, err
}

// signerOf is meta's verdict as a summary holds it.
func signerOf(meta Meta) *signer {
	if meta.Key == "" {
		return nil
	}
	return &signer{by: meta.SignedBy, key: meta.Key}
}

func sameSigner(a, b *signer) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// newestOf is the newest kept version of s.
func (s *summary) newest() (kept, bool) {
	if len(s.kept) == 0 {
		return kept{}, false
	}
	return s.kept[len(s.kept)-1], true
}

func (h *History) recordLocked(id, content string, meta Meta, serve Serve) (Version, bool, error) {
	digest := Digest(content)
	h.mu.RLock()
	s := h.sums[id]
	h.mu.RUnlock()
	var hd *head
	if h.st.Shared() {
		// Another instance may have written a version since.
		var err error
		if hd, err = h.getHead(id); err != nil {
			return Version{}, false, err
		}
		s = nil
		if hd != nil && len(hd.Versions) > 0 {
			s = summaryOf(hd)
		}
	}
	if s != nil && s.digest == digest {
		if k, _ := s.newest(); sameSigner(k.signer, signerOf(meta)) {
			v := Version{Version: s.latest, RegisteredAt: registry.Timestamp(h.cfg.Now()), Bytes: len(content), SHA256: hex.EncodeToString(digest[:])}
			if err := h.commitServed(serve, content, v); err != nil {
				return Version{}, false, err
			}
			return v, false, nil
		}
	}
	if h.st.Shared() {
		if u, ok := h.st.(kv.Updater); ok {
			return h.recordShared(u, id, content, digest, meta, hd, serve)
		}
	}
	if hd == nil && s != nil {
		// Nobody else writes this store, every head was loaded into a
		// summary, and heads change only under the id's lock (held): the
		// summary is the head, without a read and a decode of up to
		// Retain versions.
		hd = s.head(id)
	}
	if hd == nil {
		hd = &head{ID: id}
	}
	now := h.cfg.Now()
	hd.Seq = max(hd.Seq, hd.latest()) + 1
	v := newVersion(hd.Seq, now, content, digest, meta)
	hv := headVersion{N: v.Version, Key: h.nextKey.Add(1) - 1, Bytes: len(content), At: now.UnixNano(), SHA256: v.SHA256, SignedBy: meta.SignedBy, KeyFP: meta.Key}
	hd.Versions = append(hd.Versions, hv)
	dropped := h.retain(hd)
	var served []kv.Write
	var done func()
	if serve != nil {
		served, done = serve(content, v)
	}
	writes := make([]kv.Write, 0, 2+len(dropped)+len(served))
	writes = append(writes, served...)
	writes = append(writes,
		kv.Write{Scope: h.contents, Key: contentKey(hv.Key), Value: encodeContentRow(id, v, content)},
		kv.Write{Scope: h.heads, Key: id, Value: encodeHead(hd)})
	for _, d := range dropped {
		writes = append(writes, kv.Write{Scope: h.contents, Key: contentKey(d.Key), Delete: true})
	}
	if _, err := h.st.Commit(ctx(), writes...); err != nil {
		return Version{}, false, fmt.Errorf("record version %d of %s %s: %w", v.Version, h.cfg.Noun, id, err)
	}
	for _, d := range dropped {
		h.cache.forget(d.Key)
	}
	h.setSummary(id, summaryOf(hd))
	if done != nil {
		done()
	}
	return v, true, nil
}

// newVersion is the metadata of a new version n registered at now.
func newVersion(n int, now time.Time, content string, digest [32]byte, meta Meta) Version {
	v := Version{Version: n, RegisteredAt: registry.Timestamp(now), Bytes: len(content), SHA256: hex.EncodeToString(digest[:]),
		Message: meta.Message, Author: meta.Author, Key: meta.Key, Signature: meta.Signature}
	if meta.Key != "" && meta.SignedBy != "" {
		by := meta.SignedBy
		v.SignedBy = &by
	}
	return v
}

// commitServed stores what serve returns for content (version v), alone.
func (h *History) commitServed(serve Serve, content string, v Version) error {
	if serve == nil {
		return nil
	}
	writes, done := serve(content, v)
	if len(writes) > 0 {
		if _, err := h.st.Commit(ctx(), writes...); err != nil {
			return err
		}
	}
	if done != nil {
		done()
	}
	return nil
}

// recordShared records a version on state other instances share: the
// number from an atomic increment of seq, the content row first (a head
// never names a missing row), then the version's field in the head. The
// served row is written only by the instance whose version is the newest
// once its field is in, and checked again after: if a newer version came
// in meanwhile, the served row is set to that one, so it always ends at
// the newest version whatever order the writes land in.
func (h *History) recordShared(u kv.Updater, id, content string, digest [32]byte, meta Meta, hd *head, serve Serve) (Version, bool, error) {
	if hd != nil && hd.legacy {
		if err := h.convert(u, hd); err != nil {
			return Version{}, false, err
		}
	}
	raw, err := u.Update(ctx(), h.heads, id,
		kv.Op{Type: kv.OpSet, Field: "id", Value: json.RawMessage(jsonString(id))},
		kv.Op{Type: kv.OpIncrement, Field: "seq", By: 1})
	if err != nil {
		return Version{}, false, fmt.Errorf("number a new version of %s %s: %w", h.cfg.Noun, id, err)
	}
	numbered, err := parseHead(raw)
	if err != nil {
		return Version{}, false, fmt.Errorf("number a new version of %s %s: the head does not decode: %w", h.cfg.Noun, id, err)
	}
	now := h.cfg.Now()
	v := newVersion(numbered.Seq, now, content, digest, meta)
	hv := headVersion{N: v.Version, Key: h.nextKey.Add(1) - 1, Bytes: len(content), At: now.UnixNano(), SHA256: v.SHA256, SignedBy: meta.SignedBy, KeyFP: meta.Key}
	if _, err := h.st.Commit(ctx(), kv.Write{Scope: h.contents, Key: contentKey(hv.Key), Value: encodeContentRow(id, v, content)}); err != nil {
		return Version{}, false, fmt.Errorf("record version %d of %s %s: %w", v.Version, h.cfg.Noun, id, err)
	}
	raw, err = u.Update(ctx(), h.heads, id, kv.Op{Type: kv.OpSet, Field: versionField(v.Version), Value: appendVersionEntry(nil, hv)})
	if err != nil {
		return Version{}, false, fmt.Errorf("record version %d of %s %s: %w", v.Version, h.cfg.Noun, id, err)
	}
	after, err := parseHead(raw)
	if err != nil {
		return Version{}, false, fmt.Errorf("record version %d of %s %s: the head does not decode: %w", v.Version, h.cfg.Noun, id, err)
	}
	if dropped := h.retain(after); len(dropped) > 0 {
		ops := make([]kv.Op, 0, 2*len(dropped))
		for _, d := range dropped {
			ops = append(ops, kv.Op{Type: kv.OpRemove, Field: versionField(d.N)}, kv.Op{Type: kv.OpRemove, Field: yankField(d.N)})
		}
		if raw, err := u.Update(ctx(), h.heads, id, ops...); err == nil {
			if hd2, err := parseHead(raw); err == nil {
				after = hd2
			}
			for _, d := range dropped {
				_, _ = h.st.Commit(ctx(), kv.Write{Scope: h.contents, Key: contentKey(d.Key), Delete: true})
				h.cache.forget(d.Key)
			}
		}
	}
	// The summary first: what the served row's callback puts in the
	// caller's memory asks it which version a read serves.
	h.setSummary(id, summaryOf(after))
	if serve != nil && after.latest() == v.Version {
		if err := h.commitServed(serve, content, v); err != nil {
			return Version{}, false, err
		}
		if now, err := h.getHead(id); err == nil && now != nil && now.latest() > v.Version {
			h.setSummary(id, summaryOf(now))
			h.serveNewest(id, now, serve)
		}
	}
	return v, true, nil
}

// serveNewest sets the served row to the newest version of hd (another
// instance's, recorded while this one wrote its own).
func (h *History) serveNewest(id string, hd *head, serve Serve) {
	newest := hd.Versions[len(hd.Versions)-1]
	row, err := h.row(id, newest.N, newest.Key, newest.SHA256)
	if err != nil {
		return // that instance serves it itself
	}
	_ = h.commitServed(serve, row.Content, row.Version)
}

// convert rewrites a head of the format before as fields of this one, in
// one atomic update (another instance converting it too writes the same).
func (h *History) convert(u kv.Updater, hd *head) error {
	ops := []kv.Op{{Type: kv.OpRemove, Field: "versions"}, {Type: kv.OpRemove, Field: "latest"}, {Type: kv.OpRemove, Field: "sha256"},
		{Type: kv.OpSet, Field: "seq", Value: json.RawMessage(fmt.Sprint(hd.Seq))}}
	for _, v := range hd.Versions {
		ops = append(ops, kv.Op{Type: kv.OpSet, Field: versionField(v.N), Value: appendVersionEntry(nil, v)})
	}
	if _, err := u.Update(ctx(), h.heads, hd.ID, ops...); err != nil {
		return fmt.Errorf("convert the history of %s %s: %w", h.cfg.Noun, hd.ID, err)
	}
	hd.legacy = false
	return nil
}

// change stores a change of hd (labels, yanks, deprecation) already made
// to it: the whole head on a store nobody shares, else ops, applied
// atomically so that a concurrent change on another instance is kept.
// Callers hold id's lock.
func (h *History) change(hd *head, ops ...kv.Op) error {
	if u, ok := h.st.(kv.Updater); ok && h.st.Shared() {
		if hd.legacy {
			if err := h.convert(u, hd); err != nil {
				return err
			}
		}
		raw, err := u.Update(ctx(), h.heads, hd.ID, ops...)
		if err != nil {
			return err
		}
		after, err := parseHead(raw)
		if err != nil {
			return fmt.Errorf("the history of %s %s does not decode after a change: %w", h.cfg.Noun, hd.ID, err)
		}
		h.setSummary(hd.ID, summaryOf(after))
		return nil
	}
	if err := h.putHead(hd); err != nil {
		return err
	}
	h.setSummary(hd.ID, summaryOf(hd))
	return nil
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// retain drops the versions older than the last Retain that no label
// holds, and returns them.
func (h *History) retain(hd *head) []headVersion {
	cut := len(hd.Versions) - h.cfg.Retain // versions before cut may go
	if cut <= 0 {
		return nil
	}
	latest := hd.latest()
	var dropped []headVersion
	out := hd.Versions[:0]
	for i, v := range hd.Versions {
		if i < cut && v.N != latest && !labelled(hd.Labels, v.N) {
			dropped = append(dropped, v)
			delete(hd.Yanked, v.N)
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
	if i < 0 || n == hd.latest() || labelled(hd.Labels, n) {
		return false
	}
	key := hd.Versions[i].Key
	hd.Versions = slices.Delete(hd.Versions, i, i+1)
	delete(hd.Yanked, n)
	// The head first: a leftover content row is harmless, a head naming
	// a missing row is not.
	if h.change(hd, kv.Op{Type: kv.OpRemove, Field: versionField(n)}, kv.Op{Type: kv.OpRemove, Field: yankField(n)}) != nil {
		return false
	}
	_, _ = h.st.Commit(ctx(), kv.Write{Scope: h.contents, Key: contentKey(key), Delete: true})
	h.cache.forget(key)
	return true
}
