package worker

// PublisherOf says which connection published the kind's ("skill" or
// "prompt") id and under which scoped token ("" for none), as ownership
// recorded it. ok is false when no owner is known: the id is not
// published, the engine named no caller, or the registry restarted since
// (owners live in memory). It is a map read under the ownership lock, cheap
// enough to call once per row of a page.
func (w *Worker) PublisherOf(kind, id string) (workerID, token string, ok bool) {
	w.own.mu.Lock()
	o, ok := w.own.owners[kind+"\x00"+id]
	w.own.mu.Unlock()
	return o.workerID, o.token, ok
}
