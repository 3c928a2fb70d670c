package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Limits inherited from bbolt (bucket names and keys are bbolt keys).
const (
	// MaxScopeBytes is the longest scope name the store accepts.
	MaxScopeBytes = bolt.MaxKeySize
	// MaxKeyBytes is the longest key the store accepts.
	MaxKeyBytes = bolt.MaxKeySize
	// maxBatch caps how many writes share one transaction.
	maxBatch = 4096
	// gatherWindow is the longest a started batch waits for writers that
	// were just released to come back with their next write.
	gatherWindow = 500 * time.Microsecond
	// pageSize is the bbolt page size of a new file (an existing file keeps
	// its own). A leaf holding two or three 2 KiB skill rows then fits one
	// page, which bbolt writes from its pool of page buffers; with 4 KiB
	// pages such a leaf overflows and bbolt allocates a fresh multi-page
	// buffer for it on every commit (a quarter of all bytes allocated by a
	// skills::register).
	pageSize = 8192
	// seqBytes is the size of the insertion sequence stored before each value.
	seqBytes = 8
	// dropMappedEvery is how many bytes of values are written between two
	// dropMapped calls (see there). A write touches whole pages of the
	// tree around its key: a skills::register writes ~4.5 KiB (version,
	// head, served row) into three buckets and reads an 8 KiB leaf of
	// each, ~6x its size. Every 256 KiB keeps the file's share of resident
	// memory at 1-3 MiB during a burst of registrations (every MiB left up
	// to 6 MiB, a third of the bodies of 10 000 2 KiB skills: xproc
	// BenchmarkMemory10K). One call walks the map's page tables (well
	// under a millisecond for a few hundred MiB) and the next commit
	// faults its pages in again: ~3 µs per 2 KiB write in
	// BenchmarkSetSkills64, not measurable in a register's ~140 µs.
	dropMappedEvery = 256 << 10
	// dropMappedIdle: once no write came for this long, the pages the last
	// writes touched are dropped too, rather than staying resident until
	// the next burst; under load it never fires.
	dropMappedIdle = 100 * time.Millisecond
)

// Errors returned by the store. Validation errors wrap ErrInvalid.
var (
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid is wrapped by every input validation error.
	ErrInvalid = errors.New("store: invalid input")
)

// UpdateFunc computes a new value from the current one. It runs on the
// store's single committer goroutine, so it sees every earlier write and no
// later one; it must be quick and must not call back into the Store. old is
// nil when exists is false. Returning a nil value leaves the key unchanged;
// returning an error aborts the update and is handed back to the caller.
type UpdateFunc func(old json.RawMessage, exists bool) (json.RawMessage, error)

// Store is a durable scope/key → JSON value map. It is safe for concurrent
// use. A file-backed store reads straight from bbolt (its memory-mapped
// file; no copy of the values on the heap); writes go through one committer
// goroutine that groups them into bbolt transactions and returns only after
// the transaction is fsync'd. A memory-only store keeps the same data in
// maps instead.
type Store struct {
	db *bolt.DB // nil for a memory-only store

	mu     sync.RWMutex // guards mem and closed
	mem    map[string]*scope
	closed bool

	// seqs is the next insertion sequence of each scope. Only the committer
	// reads or writes it (and load, before the committer starts).
	seqs map[string]uint64

	// commits and committed count transactions and the ops in them (read
	// by the benchmarks: the mean batch size).
	commits, committed atomic.Int64

	// arena holds the records of the batch being committed; only the
	// committer uses it.
	arena []byte
	// sinceDrop counts the bytes written since the last dropMapped; only
	// the committer uses it.
	sinceDrop int

	// observer, when set, is told about every commit (SetCommitObserver).
	observer atomic.Pointer[func(CommitStats)]

	sendMu     sync.RWMutex // held shared while handing an op to the committer
	sendClosed bool         // guarded by sendMu
	ops        chan *op
	stop       chan struct{}
	stopped    chan struct{}
	once       sync.Once
}

// scope is one scope of a memory-only store.
type scope struct {
	entries map[string]entry
}

type entry struct {
	seq uint64
	val []byte
}

type opKind uint8

const (
	opSet opKind = iota
	opDelete
	opUpdate
	opGroup // several sets committed in one transaction (SetGroupAsync)
)

type op struct {
	kind  opKind
	scope string
	key   string
	value []byte
	fn    UpdateFunc
	group []*op // the sets of an opGroup

	// results, valid after done is closed
	old     []byte
	newVal  []byte
	existed bool
	changed bool
	err     error
	done    chan struct{} // closed when finished (synchronous callers)
	cb      func(*op)     // called when finished (asynchronous callers)

	// staged change
	seq uint64
}

// Open opens (or creates) the bbolt file at path. Another process holding
// the file makes Open fail after a few seconds instead of blocking forever.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        5 * time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		PageSize:       pageSize,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is locked by another process (is another engine using the same data directory?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := newStore(db)
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: load %s: %w", path, err)
	}
	go s.commitLoop()
	return s, nil
}

// OpenMemory returns a store that keeps everything in memory only. It has the
// same semantics as a file-backed store except that nothing survives Close.
func OpenMemory() *Store {
	s := newStore(nil)
	go s.commitLoop()
	return s
}

func newStore(db *bolt.DB) *Store {
	s := &Store{
		db:      db,
		seqs:    make(map[string]uint64),
		ops:     make(chan *op, maxBatch),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if db == nil {
		s.mem = make(map[string]*scope)
	}
	return s
}

// load checks every record of the file and finds each scope's next
// insertion sequence. It reads the file once; the pages it touched belong to
// the kernel's page cache, not to the heap.
func (s *Store) load() error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			var next uint64
			err := b.ForEach(func(k, v []byte) error {
				if len(v) < seqBytes {
					return fmt.Errorf("scope %q key %q: record of %d bytes is too short", name, k, len(v))
				}
				if seq := binary.BigEndian.Uint64(v[:seqBytes]); seq >= next {
					next = seq + 1
				}
				return nil
			})
			if err != nil {
				return err
			}
			s.seqs[string(name)] = next
			return nil
		})
	})
}

// Close stops the committer after it has finished every accepted write and
// closes the file. Later calls return ErrClosed.
func (s *Store) Close() error {
	err := ErrClosed
	s.once.Do(func() {
		// Wait for in-flight submissions, then refuse new ones; the
		// committer keeps draining meanwhile, so this cannot block.
		s.sendMu.Lock()
		s.sendClosed = true
		s.sendMu.Unlock()
		close(s.stop)
		<-s.stopped
		s.mu.Lock()
		s.closed = true
		s.mem = nil // release a memory-only store's data even if the Store stays reachable
		s.mu.Unlock()
		err = nil
		if s.db != nil {
			err = s.db.Close()
		}
	})
	return err
}

// Get returns a copy of the value stored under scope/key.
func (s *Store) Get(scope, key string) (json.RawMessage, bool, error) {
	var out json.RawMessage
	var ok bool
	err := s.read(func(tx *bolt.Tx) {
		if b := tx.Bucket([]byte(scope)); b != nil {
			if v := b.Get([]byte(key)); len(v) >= seqBytes {
				out, ok = bytes.Clone(v[seqBytes:]), true
			}
		}
	}, func() {
		if sc := s.mem[scope]; sc != nil {
			if e, found := sc.entries[key]; found {
				out, ok = bytes.Clone(e.val), true
			}
		}
	})
	return out, ok, err
}

// read runs fromFile in a read transaction of a file-backed store, or
// fromMemory under the read lock of a memory-only one.
func (s *Store) read(fromFile func(*bolt.Tx), fromMemory func()) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.db == nil {
		fromMemory()
		return nil
	}
	return s.db.View(func(tx *bolt.Tx) error {
		fromFile(tx)
		return nil
	})
}

// keyed is one record of a scope: its key, sequence and value.
type keyed struct {
	key string
	entry
}

// records returns every record of scope in insertion order; values are
// copied only when withValues.
func (s *Store) records(scope string, withValues bool) ([]keyed, error) {
	var out []keyed
	err := s.read(func(tx *bolt.Tx) {
		b := tx.Bucket([]byte(scope))
		if b == nil {
			return
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) < seqBytes {
				continue
			}
			r := keyed{key: string(k), entry: entry{seq: binary.BigEndian.Uint64(v[:seqBytes])}}
			if withValues {
				r.val = bytes.Clone(v[seqBytes:])
			}
			out = append(out, r)
		}
	}, func() {
		if sc := s.mem[scope]; sc != nil {
			out = make([]keyed, 0, len(sc.entries))
			for k, e := range sc.entries {
				r := keyed{key: k, entry: entry{seq: e.seq}}
				if withValues {
					r.val = bytes.Clone(e.val)
				}
				out = append(out, r)
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, err
}

// List returns copies of every value in scope, in insertion order: a key
// keeps the position of its first Set until it is deleted; a deleted and
// re-created key moves to the end. An unknown scope yields an empty list.
func (s *Store) List(scope string) ([]json.RawMessage, error) {
	recs, err := s.records(scope, true)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		out[i] = r.val
	}
	return out, nil
}

// Keys returns the keys of scope in insertion order (see List).
func (s *Store) Keys(scope string) ([]string, error) {
	recs, err := s.records(scope, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.key
	}
	return out, nil
}

// ListGroups returns the sorted names of the scopes that hold at least one key.
func (s *Store) ListGroups() ([]string, error) {
	out := []string{}
	err := s.read(func(tx *bolt.Tx) {
		_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if k, _ := b.Cursor().First(); k != nil {
				out = append(out, string(name))
			}
			return nil
		})
	}, func() {
		for name, sc := range s.mem {
			if len(sc.entries) > 0 {
				out = append(out, name)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// Set stores value under scope/key and returns the previous value (nil when
// the key did not exist). It returns after the write is durable.
func (s *Store) Set(scope, key string, value json.RawMessage) (json.RawMessage, error) {
	if err := validate(scope, key); err != nil {
		return nil, err
	}
	if !json.Valid(value) {
		return nil, fmt.Errorf("%w: value for %s/%s is not valid JSON", ErrInvalid, scope, key)
	}
	o := &op{kind: opSet, scope: scope, key: key, value: bytes.Clone(value)}
	if err := s.submit(o); err != nil {
		return nil, err
	}
	return o.old, o.err
}

// Delete removes scope/key and returns the value it held. existed is false
// (and nothing is written) when the key was absent.
func (s *Store) Delete(scope, key string) (old json.RawMessage, existed bool, err error) {
	if err := validate(scope, key); err != nil {
		return nil, false, err
	}
	o := &op{kind: opDelete, scope: scope, key: key}
	if err := s.submit(o); err != nil {
		return nil, false, err
	}
	return o.old, o.existed, o.err
}

// Update atomically replaces scope/key with fn(old). It returns the old value,
// the value stored afterwards (the old one when fn returned nil) and whether
// the key existed before. The write is durable when Update returns.
func (s *Store) Update(scope, key string, fn UpdateFunc) (old, updated json.RawMessage, existed bool, err error) {
	if err := validate(scope, key); err != nil {
		return nil, nil, false, err
	}
	o := &op{kind: opUpdate, scope: scope, key: key, fn: fn}
	if err := s.submit(o); err != nil {
		return nil, nil, false, err
	}
	return o.old, o.newVal, o.existed, o.err
}

func validate(scope, key string) error {
	switch {
	case scope == "":
		return fmt.Errorf("%w: scope must be a non-empty string", ErrInvalid)
	case len(scope) > MaxScopeBytes:
		return fmt.Errorf("%w: scope is %d bytes, the limit is %d", ErrInvalid, len(scope), MaxScopeBytes)
	case key == "":
		return fmt.Errorf("%w: key must be a non-empty string", ErrInvalid)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalid, len(key), MaxKeyBytes)
	}
	return nil
}

// submit hands o to the committer and waits until it is durable or failed.
func (s *Store) submit(o *op) error {
	o.done = make(chan struct{})
	if err := s.enqueue(o); err != nil {
		return err
	}
	<-o.done
	return nil
}

// enqueue hands o to the committer without waiting.
func (s *Store) enqueue(o *op) error {
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.sendClosed {
		return ErrClosed
	}
	s.ops <- o
	return nil
}

// SetAsync is Set without waiting: done is called with Set's results once
// the write is durable (or failed). done runs on the committer goroutine
// (or, for an invalid or refused write, on the caller's): it must be quick
// and must not wait for another write. Reads (Get, List) are fine and see
// the write.
func (s *Store) SetAsync(scope, key string, value json.RawMessage, done func(old json.RawMessage, err error)) {
	if err := validate(scope, key); err != nil {
		done(nil, err)
		return
	}
	if !json.Valid(value) {
		done(nil, fmt.Errorf("%w: value for %s/%s is not valid JSON", ErrInvalid, scope, key))
		return
	}
	o := &op{kind: opSet, scope: scope, key: key, value: bytes.Clone(value),
		cb: func(o *op) { done(o.old, o.err) }}
	if err := s.enqueue(o); err != nil {
		done(nil, err)
	}
}

// SetAsyncOwned is SetAsync for a value the caller has already checked
// and hands over: value must be valid JSON (it is not checked again) and
// must not be modified afterwards (it is not copied). The engine's
// state::set uses it: its input was validated once when it was decoded,
// and a 2 KiB skill row was otherwise scanned and copied once more per
// write.
func (s *Store) SetAsyncOwned(scope, key string, value json.RawMessage, done func(old json.RawMessage, err error)) {
	if err := validate(scope, key); err != nil {
		done(nil, err)
		return
	}
	if s.db == nil {
		value = bytes.Clone(value) // kept: must not pin the caller's larger buffer
	}
	o := &op{kind: opSet, scope: scope, key: key, value: value,
		cb: func(o *op) { done(o.old, o.err) }}
	if err := s.enqueue(o); err != nil {
		done(nil, err)
	}
}

// Write is one write of SetGroupAsync: Value stored under Scope/Key, or
// the key removed when Delete is set.
type Write struct {
	Scope, Key string
	Value      json.RawMessage
	Delete     bool
}

// SetGroupAsync stores every write (and removes every Delete) in one
// transaction: they become durable together, or (on a failed commit) none
// does. done gets the previous value of each write, in order. Like SetAsyncOwned, the values
// must be valid JSON and are handed over (not checked, not copied). A
// registration that records a version uses it so the served row and its
// history wait for one fsync, not two group commits.
func (s *Store) SetGroupAsync(writes []Write, done func(olds []json.RawMessage, err error)) {
	if len(writes) == 0 {
		done(nil, nil)
		return
	}
	g := &op{kind: opGroup, group: make([]*op, len(writes))}
	for i, w := range writes {
		if err := validate(w.Scope, w.Key); err != nil {
			done(nil, err)
			return
		}
		if w.Delete {
			g.group[i] = &op{kind: opDelete, scope: w.Scope, key: w.Key}
			continue
		}
		v := w.Value
		if s.db == nil {
			v = bytes.Clone(v)
		}
		g.group[i] = &op{kind: opSet, scope: w.Scope, key: w.Key, value: v}
	}
	g.cb = func(g *op) {
		olds := make([]json.RawMessage, len(g.group))
		for i, o := range g.group {
			olds[i] = o.old
		}
		done(olds, g.err)
	}
	if err := s.enqueue(g); err != nil {
		done(nil, err)
	}
}

// flatten replaces the batch's groups by their writes (the same slice
// when there is no group).
func flatten(batch []*op) []*op {
	n, groups := 0, false
	for _, o := range batch {
		if o.kind == opGroup {
			n += len(o.group)
			groups = true
		} else {
			n++
		}
	}
	if !groups {
		return batch
	}
	flat := make([]*op, 0, n)
	for _, o := range batch {
		if o.kind == opGroup {
			flat = append(flat, o.group...)
		} else {
			flat = append(flat, o)
		}
	}
	return flat
}

// DeleteAsync is Delete without waiting; done follows SetAsync's rules.
func (s *Store) DeleteAsync(scope, key string, done func(old json.RawMessage, existed bool, err error)) {
	if err := validate(scope, key); err != nil {
		done(nil, false, err)
		return
	}
	o := &op{kind: opDelete, scope: scope, key: key,
		cb: func(o *op) { done(o.old, o.existed, o.err) }}
	if err := s.enqueue(o); err != nil {
		done(nil, false, err)
	}
}

// UpdateAsync is Update without waiting; done follows SetAsync's rules.
func (s *Store) UpdateAsync(scope, key string, fn UpdateFunc, done func(old, updated json.RawMessage, existed bool, err error)) {
	if err := validate(scope, key); err != nil {
		done(nil, nil, false, err)
		return
	}
	o := &op{kind: opUpdate, scope: scope, key: key, fn: fn,
		cb: func(o *op) { done(o.old, o.newVal, o.existed, o.err) }}
	if err := s.enqueue(o); err != nil {
		done(nil, nil, false, err)
	}
}

// commitLoop is the single writer. It takes one op, drains whatever else is
// queued (up to maxBatch), applies the whole batch in one transaction, waits
// for the fsync, publishes the result to the in-memory mirror and releases
// the callers.
//
// Without more, concurrent writers split into two groups that alternate:
// the ones released by batch N ask again while batch N+1 (everyone else) is
// being synced, so every call waits for two commits. To keep them in one
// group the loop remembers how many writers are active (the ones it just
// released plus the ones already queued) and, once the next batch has
// started, waits up to gatherWindow for that many ops before committing. A
// lone writer is never delayed: its target is reached by its own op.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	batch := make([]*op, 0, maxBatch)
	target := 1
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	for {
		batch = batch[:0]
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		case <-idle.C:
			s.sinceDrop = 0
			s.dropMapped()
			continue
		case <-s.stop:
			s.finishQueued(batch)
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if len(batch) < target {
			timer.Reset(gatherWindow)
		gather:
			for len(batch) < target {
				select {
				case o := <-s.ops:
					batch = append(batch, o)
				case <-timer.C:
					break gather
				case <-s.stop:
					break gather
				}
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		s.commit(batch)
		s.commits.Add(1)
		s.committed.Add(int64(len(batch)))
		if s.sinceDrop > 0 {
			idle.Reset(dropMappedIdle) // pushed back by every commit
		}
		target = min(len(batch)+len(s.ops), maxBatch)
	}
}

// finishQueued commits what is still queued when the store closes.
func (s *Store) finishQueued(batch []*op) {
	for {
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		default:
			if len(batch) > 0 {
				s.commit(batch)
			}
			return
		}
	}
}

// lookupFunc returns the committed record of scope/key; val must stay
// valid after the transaction (a copy when it comes from the file).
type lookupFunc func(scope, key string) (entry, bool)

// stage computes every op's outcome against the committed data plus the
// batch's own earlier changes, and returns the scopes' next sequences after
// the batch (applied by the caller once the batch is durable).
func (s *Store) stage(batch []*op, lookup lookupFunc) map[string]uint64 {
	type staged struct {
		e       entry
		deleted bool
	}
	changes := make(map[[2]string]staged)
	seqs := make(map[string]uint64)
	for _, o := range batch {
		var cur entry
		var exists bool
		if st, ok := changes[[2]string{o.scope, o.key}]; ok {
			cur, exists = st.e, !st.deleted
		} else {
			cur, exists = lookup(o.scope, o.key)
		}
		o.existed = exists
		if exists {
			o.old = cur.val
		}
		switch o.kind {
		case opSet:
			o.newVal = o.value
		case opDelete:
			if exists {
				o.changed = true
				changes[[2]string{o.scope, o.key}] = staged{deleted: true}
			}
			continue
		case opUpdate:
			nv, err := runUpdate(o.fn, o.old, exists)
			if err != nil {
				o.err = err
				continue
			}
			if nv == nil {
				o.newVal = o.old
				continue
			}
			if !json.Valid(nv) {
				o.err = fmt.Errorf("%w: updated value for %s/%s is not valid JSON", ErrInvalid, o.scope, o.key)
				continue
			}
			o.newVal = bytes.Clone(nv)
		}
		o.changed = true
		seq := cur.seq
		if !exists {
			next, ok := seqs[o.scope]
			if !ok {
				next = s.seqs[o.scope]
			}
			seq = next
			seqs[o.scope] = next + 1
		}
		o.seq = seq
		changes[[2]string{o.scope, o.key}] = staged{e: entry{seq: seq, val: o.newVal}}
	}
	return seqs
}

// CommitStats describes one commit of the committer: a group of writes made
// durable together.
type CommitStats struct {
	// Writes is how many writes the commit held (each write of a
	// SetGroupAsync counts).
	Writes int
	// Duration is the whole commit: staging the writes, bbolt's
	// transaction, its page writes and fdatasyncs.
	Duration time.Duration
	// Sync is bbolt's write phase of the transaction: writing the dirty
	// pages and the meta page and fdatasync'ing after each (zero for a
	// memory-only store).
	Sync time.Duration
	// Err is the commit's error (nil when it is durable).
	Err error
}

// SetCommitObserver makes fn be called after every commit, on the committer
// goroutine, before the commit's writers are released: it must be quick (a
// counter or histogram update) and must not call the Store. nil removes it.
func (s *Store) SetCommitObserver(fn func(CommitStats)) {
	if fn == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&fn)
}

// observe hands the commit's figures to the observer, if any; a panicking
// observer must not stop the committer.
func (s *Store) observe(st CommitStats) {
	fn := s.observer.Load()
	if fn == nil {
		return
	}
	defer func() { _ = recover() }()
	(*fn)(st)
}

func (s *Store) commit(groups []*op) {
	batch := flatten(groups)
	var err error
	var seqs map[string]uint64
	start := time.Now()
	var syncTime time.Duration
	if s.db == nil {
		s.mu.Lock()
		seqs = s.stage(batch, func(scopeName, key string) (entry, bool) {
			if sc := s.mem[scopeName]; sc != nil {
				e, ok := sc.entries[key]
				return e, ok
			}
			return entry{}, false
		})
		s.applyMemory(batch)
		s.mu.Unlock()
	} else {
		var wtx *bolt.Tx
		err = s.db.Update(func(tx *bolt.Tx) error {
			wtx = tx
			seqs = s.stage(batch, func(scopeName, key string) (entry, bool) {
				b := tx.Bucket([]byte(scopeName))
				if b == nil {
					return entry{}, false
				}
				v := b.Get([]byte(key))
				if len(v) < seqBytes {
					return entry{}, false
				}
				return entry{seq: binary.BigEndian.Uint64(v[:seqBytes]), val: bytes.Clone(v[seqBytes:])}, true
			})
			var err error
			s.arena, err = writeBatch(tx, batch, s.arena)
			return err
		})
		if wtx != nil {
			// The transaction's statistics outlive its commit.
			st := wtx.Stats()
			syncTime = st.GetWriteTime()
		}
		// Every commit reads the pages it changes through bbolt's map;
		// without this, a write-heavy history left hundreds of MiB of the
		// file's pages in the process's resident set.
		if s.sinceDrop += len(s.arena); s.sinceDrop >= dropMappedEvery {
			s.sinceDrop = 0
			s.dropMapped()
		}
	}
	if err == nil {
		for name, next := range seqs {
			s.seqs[name] = next
		}
	}
	s.observe(CommitStats{Writes: len(batch), Duration: time.Since(start), Sync: syncTime, Err: err})
	for _, o := range batch {
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("store: commit: %w", err)
		}
		// Hand out copies so callers never alias stored data.
		if o.old != nil {
			o.old = bytes.Clone(o.old)
		}
		if o.kind == opUpdate && o.newVal != nil {
			o.newVal = bytes.Clone(o.newVal)
		}
		if o.cb != nil || o.done != nil { // not a write of a group
			o.finish()
		}
	}
	for _, g := range groups {
		if g.kind != opGroup {
			continue
		}
		for _, o := range g.group {
			if o.err != nil {
				g.err = o.err
				break
			}
		}
		g.finish()
	}
}

// writeBatch writes the batch's changes into tx, in batch order. bbolt
// keeps the record slices it is given until the transaction ends, so the
// records are laid out in arena, which is reused by the next batch (one
// buffer for every commit instead of one allocation per write); the arena
// is returned for that.
func writeBatch(tx *bolt.Tx, batch []*op, arena []byte) ([]byte, error) {
	size := 0
	for _, o := range batch {
		if o.changed && o.kind != opDelete {
			size += seqBytes + len(o.newVal)
		}
	}
	if cap(arena) < size || cap(arena) > max(size, 1<<20) {
		// Grown once up front (bbolt holds slices of it); a burst's large
		// arena is not kept.
		arena = make([]byte, 0, size)
	}
	arena = arena[:0]
	for _, o := range batch {
		if !o.changed {
			continue
		}
		b, err := tx.CreateBucketIfNotExists([]byte(o.scope))
		if err != nil {
			return arena, fmt.Errorf("scope %q: %w", o.scope, err)
		}
		if o.kind == opDelete {
			if err := b.Delete([]byte(o.key)); err != nil {
				return arena, fmt.Errorf("delete %s/%s: %w", o.scope, o.key, err)
			}
			continue
		}
		start := len(arena)
		arena = binary.BigEndian.AppendUint64(arena, o.seq)
		arena = append(arena, o.newVal...)
		if err := b.Put([]byte(o.key), arena[start:len(arena):len(arena)]); err != nil {
			return arena, fmt.Errorf("put %s/%s: %w", o.scope, o.key, err)
		}
	}
	return arena, nil
}

// applyMemory applies the batch's changes to a memory-only store. Callers
// hold s.mu.
func (s *Store) applyMemory(batch []*op) {
	for _, o := range batch {
		if !o.changed {
			continue
		}
		sc := s.mem[o.scope]
		if sc == nil {
			sc = &scope{entries: make(map[string]entry)}
			s.mem[o.scope] = sc
		}
		if o.kind == opDelete {
			delete(sc.entries, o.key)
			continue
		}
		sc.entries[o.key] = entry{seq: o.seq, val: o.newVal}
	}
}

// finish releases the op's caller.
func (o *op) finish() {
	if o.cb != nil {
		defer func() { _ = recover() }() // a panicking callback must not stop the committer
		o.cb(o)
		return
	}
	close(o.done)
}

// runUpdate calls fn, turning a panic into an error so that one bad update
// cannot take down the committer.
func runUpdate(fn UpdateFunc, old json.RawMessage, exists bool) (nv json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: update function panicked: %v", r)
		}
	}()
	var arg json.RawMessage
	if exists {
		arg = bytes.Clone(old)
	}
	return fn(arg, exists)
}
