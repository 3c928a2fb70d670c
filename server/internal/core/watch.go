package core

import (
	"context"
	"sync"
)

// changeFeed fans the registry's changes out: to subscribers called in
// the writer's path (Subscribe: the iii adapter fires the on-change
// trigger types from there, exactly once per change, as upstream does),
// and to watchers on goroutines of their own (Watch: in-process surfaces,
// which must never slow a registration down). Versions and label changes
// go to version subscribers only (the web page's open streams).
type changeFeed struct {
	mu       sync.Mutex
	next     int
	subs     map[int]func(Change)
	versions map[int]func(kind Kind, id string)
}

func (f *changeFeed) publish(c Change) {
	f.mu.Lock()
	fns := make([]func(Change), 0, len(f.subs))
	for _, fn := range f.subs {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

func (f *changeFeed) subscribe(fn func(Change)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(Change){}
	}
	n := f.next
	f.next++
	f.subs[n] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, n)
	}
}

func (f *changeFeed) versionChanged(kind Kind, id string) {
	f.mu.Lock()
	fns := make([]func(Kind, string), 0, len(f.versions))
	for _, fn := range f.versions {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(kind, id)
	}
}

func (f *changeFeed) subscribeVersions(fn func(Kind, string)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.versions == nil {
		f.versions = map[int]func(Kind, string){}
	}
	n := f.next
	f.next++
	f.versions[n] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.versions, n)
	}
}

// Subscribe calls fn with every change, in the writer's path, from its
// return until cancel: fn must not block. Watch is for anything slower.
func (l *Local) Subscribe(fn func(Change)) (cancel func()) { return l.changes.subscribe(fn) }

// SubscribeVersions calls fn with kind and id whenever that id's versions
// or labels change (a new version, a label move, an old version dropped),
// once the change is durable. fn runs with the id's history lock held and
// must not block.
func (l *Local) SubscribeVersions(fn func(kind Kind, id string)) (cancel func()) {
	return l.changes.subscribeVersions(fn)
}

// Watch implements Registry: fn runs on a goroutine of its own; changes
// that arrive while it is busy wait, the latest per id, in order of
// first arrival.
func (l *Local) Watch(ctx context.Context, fn func(Change)) (stop func(), err error) {
	w := newWatcher(fn)
	cancel := l.changes.subscribe(w.add)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			w.close()
		})
	}
	context.AfterFunc(ctx, stop)
	go w.run()
	return stop, nil
}

// watcher queues changes for one slow subscriber: one entry per (kind,
// id), so it holds at most as many as there are ids, whatever the rate.
type watcher struct {
	fn     func(Change)
	mu     sync.Mutex
	order  []watchKey
	latest map[watchKey]Change
	wake   chan struct{}
	done   chan struct{}
}

type watchKey struct {
	kind ChangeKind
	id   string
}

func newWatcher(fn func(Change)) *watcher {
	return &watcher{fn: fn, latest: map[watchKey]Change{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *watcher) add(c Change) {
	k := watchKey{c.Kind, c.ID}
	w.mu.Lock()
	if _, queued := w.latest[k]; !queued {
		w.order = append(w.order, k)
	}
	w.latest[k] = c
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) close() { close(w.done) }

func (w *watcher) run() {
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			if len(w.order) == 0 {
				w.mu.Unlock()
				break
			}
			k := w.order[0]
			w.order = w.order[1:]
			c := w.latest[k]
			delete(w.latest, k)
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			default:
			}
			w.fn(c)
		}
	}
}
