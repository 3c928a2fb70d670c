package worker

import "sync"

// versionFeed fans history changes out to in-process subscribers (the web
// page's open event streams). Subscribers are called synchronously with
// the id's history lock held, so they must not block.
type versionFeed struct {
	mu   sync.Mutex
	next int
	subs map[int]func(kind, id string)
}

func (f *versionFeed) publish(kind, id string) {
	f.mu.Lock()
	fns := make([]func(kind, id string), 0, len(f.subs))
	for _, fn := range f.subs {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(kind, id)
	}
}

func (f *versionFeed) subscribe(fn func(kind, id string)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(kind, id string){}
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

// SubscribeVersions calls fn with kind "skill" or "prompt" and the id
// whenever that id's versions or labels change (a new version, a label
// move, an old version dropped), once the change is durable. fn must not
// block. The returned func ends the subscription.
func (w *Worker) SubscribeVersions(fn func(kind, id string)) (cancel func()) {
	return w.hist.feed.subscribe(fn)
}

// ServeLabel is the label reads without a selector serve ("" for the
// newest version).
func (w *Worker) ServeLabel() string { return w.hist.serveLabel }

// ProtectedLabels are the labels that move only with the admin token.
func (w *Worker) ProtectedLabels() []string { return append([]string(nil), w.hist.protected...) }
