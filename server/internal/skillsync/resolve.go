package skillsync

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// want is one skill a run writes: what to read and why.
type want struct {
	name     string
	listed   Listed // Path is what is read
	selector string // the selector that picked it ("" for every skill)
	label    string // the @label it is read at
	explicit bool
}

// resolution is what a selection comes to against a registry.
type resolution struct {
	wants map[string]*want // by folder name
	// hold names folders a run must leave as they are (and keep in the
	// lock): a skill that failed, conflicts with another, or is named
	// but not served right now.
	hold map[string]bool
}

// candidate is a skill picked by a selector before it is read.
type candidate struct {
	id  string
	sel Selector
}

// resolve reads the selection against the registry. Problems (a named
// skill not served, two skills for one folder, garbage in the listing) go
// into rep; only a failing registry is an error.
func resolve(ctx context.Context, src Source, sel Selection, lock *Lock, sourceURL string, policy YankPolicy, rep *Report) (*resolution, error) {
	all, err := src.List(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Listed, len(all))
	notServed := map[string]string{}
	served := all[:0:0]
	for _, l := range all {
		if l.Problem != "" {
			notServed[l.ID] = l.Problem
			continue
		}
		byID[l.ID] = l
		served = append(served, l)
	}
	all = served
	res := &resolution{wants: map[string]*want{}, hold: map[string]bool{}}
	// Which lock entry of this source holds an id (for a pin that is gone).
	lockedByID := map[string]string{}
	for name, e := range lock.Skills {
		if e.Source == sourceURL {
			lockedByID[e.ID] = name
		}
	}
	holdID := func(id string) {
		if name, ok := lockedByID[id]; ok {
			res.hold[name] = true
		} else if l, ok := byID[id]; ok && checkName(l.Name) == nil {
			res.hold[l.Name] = true
		}
	}

	picked, err := pick(ctx, src, sel, all, rep, holdID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(picked))
	for id := range picked {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := picked[id]
		if why, ok := notServed[id]; ok && c.sel.Explicit() {
			rep.problem(Problem{Skill: id, Msg: "the registry does not serve it: " + why})
			holdID(id)
			continue
		}
		w, err := read(ctx, src, c, sel.Label, byID, lock, lockedByID, policy, rep, holdID)
		if err != nil {
			return nil, err
		}
		if w == nil {
			continue
		}
		if err := checkListed(w.listed); err != nil {
			rep.problem(Problem{Skill: id, Msg: err.Error()})
			holdID(id)
			continue
		}
		if other, ok := res.wants[w.name]; ok {
			rep.problem(Problem{Skill: w.name, Msg: fmt.Sprintf("skills %s (selected by %s) and %s (selected by %s) both have the name %s, so both would be written to the folder %s: select one of them",
				other.listed.ID, describeSelector(other.selector), id, describeSelector(c.sel.Raw), w.name, w.name)})
			res.hold[w.name] = true
			continue
		}
		if e := lock.Skills[w.name]; e != nil && e.Source != sourceURL {
			rep.problem(Problem{Skill: w.name, Msg: fmt.Sprintf("skill %s from %s has the name %s, and the folder %s holds skill %s synced from %s: the two sources give the same skill name; select only one of them",
				id, sourceURL, w.name, w.name, e.ID, e.Source)})
			res.hold[w.name] = true
			continue
		}
		if d := w.listed.Meta.Deprecated; d != "" {
			rep.note("skill %s is deprecated: %s", id, d)
		}
		res.wants[w.name] = w
	}
	for name := range res.hold {
		delete(res.wants, name)
	}
	return res, nil
}

// describeSelector names a selector in messages.
func describeSelector(raw string) string {
	switch {
	case raw == "":
		return "selecting every skill"
	case strings.HasPrefix(raw, QueryPrefix):
		return fmt.Sprintf("the query %q", strings.TrimPrefix(raw, QueryPrefix))
	}
	return raw
}

// pick applies the selectors to the listing: the ids selected, each with
// the selector that chose it. A selector naming one skill beats a
// namespace's or a query's choice of the same id; two such selectors that
// disagree are a problem.
func pick(ctx context.Context, src Source, sel Selection, all []Listed, rep *Report, holdID func(string)) (map[string]candidate, error) {
	picked := map[string]candidate{}
	add := func(id string, s Selector) {
		prev, ok := picked[id]
		switch {
		case !ok, s.Explicit() && !prev.sel.Explicit():
			picked[id] = candidate{id: id, sel: s}
		case s.Explicit() && prev.sel.Explicit() && prev.sel.Raw != s.Raw:
			rep.problem(Problem{Skill: id, Msg: fmt.Sprintf("selectors %s and %s ask for two versions of skill %s: give one", prev.sel.Raw, s.Raw, id)})
			holdID(id)
			picked[id] = candidate{id: id, sel: Selector{Kind: -1}}
		}
	}
	if sel.picksAll() {
		for _, l := range all {
			add(l.ID, Selector{Kind: SelNamespace})
		}
	}
	for _, s := range sel.Selectors {
		switch s.Kind {
		case SelID, SelPin:
			add(s.ID, s)
		case SelNamespace:
			for _, l := range all {
				if strings.HasPrefix(l.ID, s.Namespace) {
					add(l.ID, s)
				}
			}
		case SelQuery:
			ids, low, err := src.Search(ctx, s.Query, sel.QueryLimit)
			if err != nil {
				return nil, err
			}
			if low {
				rep.note("the query %q matches no skill well (the registry's search says low confidence): it selects nothing", s.Query)
				continue
			}
			for _, id := range ids {
				add(id, s)
			}
		}
	}
	for id, c := range picked {
		if c.sel.Kind == -1 {
			delete(picked, id)
		}
	}
	return picked, nil
}

// read finds what to write for one picked skill: the listing's entry, or
// the skill at its pin or at the selection's label. It returns nil when
// the skill is not written (a problem or a note says why).
func read(ctx context.Context, src Source, c candidate, label string, byID map[string]Listed, lock *Lock,
	lockedByID map[string]string, policy YankPolicy, rep *Report, holdID func(string)) (*want, error) {
	explicit := c.sel.Explicit()
	w := &want{selector: c.sel.Raw, explicit: explicit}
	served, isServed := byID[c.id]
	switch {
	case c.sel.Kind == SelPin:
		l, ok, err := getPinned(ctx, src, c.id, c.sel.Pin)
		if err != nil {
			return nil, err
		}
		gone := !ok
		if ok && l.Meta.Yanked != "" {
			gone = true
		}
		if !gone {
			w.listed = l
			break
		}
		_, synced := lockedByID[c.id]
		why := fmt.Sprintf("version %s of skill %s is no longer served", c.sel.Pin, c.id)
		if ok {
			why = fmt.Sprintf("version %s of skill %s is yanked (%s)", c.sel.Pin, c.id, l.Meta.Yanked)
		}
		switch {
		case !ok && !synced:
			rep.problem(Problem{Skill: c.id, Msg: fmt.Sprintf("the registry serves no version %s of skill %s (selector %s)", c.sel.Pin, c.id, c.sel.Raw)})
			holdID(c.id)
			return nil, nil
		case policy == YankRemove:
			rep.note("%s: removing it (yank_policy remove)", why)
			return nil, nil
		case !isServed:
			rep.problem(Problem{Skill: c.id, Msg: why + ", and the registry serves no other version to replace it with (yank_policy replace)"})
			holdID(c.id)
			return nil, nil
		}
		rep.note("%s: writing the version the registry serves instead (yank_policy replace)", why)
		w.listed = served
	case label != "":
		l, ok, err := src.Get(ctx, c.id+"@"+label)
		if err != nil {
			return nil, err
		}
		if !ok {
			if explicit {
				rep.problem(Problem{Skill: c.id, Msg: fmt.Sprintf("skill %s has no version labelled %s", c.id, label)})
				holdID(c.id)
			} else {
				rep.note("skill %s has no version labelled %s: not synced", c.id, label)
			}
			return nil, nil
		}
		w.listed, w.label = l, label
	case isServed:
		w.listed = served
	default:
		rep.problem(Problem{Skill: c.id, Msg: fmt.Sprintf("the registry serves no skill %s (selector %s)", c.id, c.sel.Raw)})
		holdID(c.id)
		return nil, nil
	}
	if w.listed.Dynamic {
		msg := fmt.Sprintf("skill %s links to live iii://fn/ sections that only the registry renders: it has no fixed content to copy into a folder (read it over MCP instead)", c.id)
		if explicit {
			rep.problem(Problem{Skill: c.id, Msg: msg})
			holdID(c.id)
		} else {
			rep.note("%s; not synced", msg)
		}
		return nil, nil
	}
	w.name = w.listed.Name
	if _, sel := splitPath(w.listed.Path); w.listed.Meta.Version == 0 {
		if n, err := strconv.Atoi(sel); err == nil {
			w.listed.Meta.Version = n
		}
	}
	return w, nil
}

// getPinned reads id@pin. A pin by digest the registry cannot read itself
// is found among the skill's versions where the source can list them.
func getPinned(ctx context.Context, src Source, id, pin string) (Listed, bool, error) {
	l, ok, err := src.Get(ctx, id+"@"+pin)
	if ok || err != nil {
		return l, ok, err
	}
	digest, byDigest := strings.CutPrefix(pin, "sha256:")
	v, canList := src.(versioner)
	if !byDigest || !canList {
		return l, false, nil
	}
	n, err := v.VersionByDigest(ctx, id, digest)
	if err != nil || n == 0 {
		return Listed{}, false, err
	}
	l, ok, err = src.Get(ctx, id+"@"+strconv.Itoa(n))
	if ok && l.Meta.SHA256 == "" {
		l.Meta.SHA256 = digest
	}
	return l, ok, err
}
