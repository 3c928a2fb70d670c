package history

import "github.com/iii-skills/skills/server/internal/kv"

// Repair settles what a crash between a new version's writes can leave on
// a store without transactions (over iii): a head whose newest version has
// no content row forgets that version, and current content (the served
// row; ok false when there is none) that is not the newest version is
// recorded as a new one with message. It also records content written
// before history existed or straight into state. current is called with
// id's lock held, so it sees no registration half done.
func (h *History) Repair(id, message string, current func() (content string, ok bool)) error {
	if err := h.load(); err != nil {
		return err
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil {
		return err
	}
	if hd != nil && len(hd.Versions) > 0 {
		newest := hd.Versions[len(hd.Versions)-1]
		if _, ok, err := h.st.Get(ctx(), h.contents, contentKey(newest.Key)); err != nil {
			return err
		} else if !ok {
			hd.Versions = hd.Versions[:len(hd.Versions)-1]
			delete(hd.Yanked, newest.N)
			ops := []kv.Op{{Type: kv.OpRemove, Field: versionField(newest.N)}, {Type: kv.OpRemove, Field: yankField(newest.N)}}
			for k, v := range hd.Labels {
				if v == newest.N {
					delete(hd.Labels, k)
				}
			}
			// Labels only ever move by merge; forgetting one rewrites them.
			ops = append(ops, kv.Op{Type: kv.OpSet, Field: "labels", Value: appendLabels(nil, hd.Labels)})
			if err := h.change(hd, ops...); err != nil {
				return err
			}
		}
	}
	content, ok := current()
	if !ok {
		return nil
	}
	_, _, err = h.recordLocked(id, content, Meta{Message: message}, nil)
	return err
}
