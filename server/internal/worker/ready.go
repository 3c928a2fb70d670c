package worker

import "errors"

// Ready reports whether the registry serves its catalog: nil once the
// client is connected to the engine (its functions and trigger types are
// then registered there: they travel with every connect) and the
// published skills have been loaded from state into the catalog; otherwise
// why not. The HTTP listener's GET /readyz answers with it.
func (w *Worker) Ready() error {
	if !w.client.Connected() {
		return errors.New("not connected to the iii engine")
	}
	if !w.skills.isReady() {
		return errors.New("skills catalog not loaded from state yet")
	}
	return nil
}
