package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/published"
	"github.com/iii-skills/skills/server/internal/registry"
)

// VersionsConfig is config.yaml's versions: block.
type VersionsConfig struct {
	// Retain is how many versions an id keeps besides labelled ones
	// (0: history.DefaultRetain).
	Retain int `yaml:"retain"`
	// MaxBytes bounds the content of all kept versions of one registry
	// (skills or prompts; 0: history.DefaultMaxBytes).
	MaxBytes int64 `yaml:"max_bytes"`
	// ServeLabel makes reads without a selector serve this label where an
	// id has it (else the newest version). Empty: always the newest.
	ServeLabel string `yaml:"serve_label"`
	// ProtectedLabels move only with the admin token (--admin-token).
	ProtectedLabels []string `yaml:"protected_labels"`
}

func (c VersionsConfig) check() error {
	if c.Retain < 0 {
		return fmt.Errorf("versions.retain must be 0 (the default, %d) or a positive count, got %d", history.DefaultRetain, c.Retain)
	}
	if c.MaxBytes < 0 {
		return fmt.Errorf("versions.max_bytes must be 0 (the default, %d) or a positive size, got %d", history.DefaultMaxBytes, c.MaxBytes)
	}
	if c.ServeLabel != "" && c.ServeLabel != history.LatestLabel {
		if err := history.CheckLabel(c.ServeLabel); err != nil {
			return fmt.Errorf("versions.serve_label: %w", err)
		}
	}
	for _, l := range c.ProtectedLabels {
		if err := history.CheckLabel(l); err != nil {
			return fmt.Errorf("versions.protected_labels: %w", err)
		}
	}
	return nil
}

// histories are the two histories of a registry.
type histories struct {
	skills, prompts *history.History
	serveLabel      string
	protected       []string
	// onChange is told of every change of versions or labels (set once,
	// before any write).
	onChange   func(kind Kind, id string)
	repairOnce sync.Once
}

func newHistories(cfg Config, opts Options, st kv.Store) *histories {
	serve := cfg.Versions.ServeLabel
	if opts.ServeLabel != "" {
		serve = opts.ServeLabel
	}
	if serve == history.LatestLabel {
		serve = ""
	}
	protected := cfg.Versions.ProtectedLabels
	if opts.ProtectedLabels != nil {
		protected = opts.ProtectedLabels
	}
	hs := &histories{serveLabel: serve, protected: protected}
	hc := func(scope, noun string) history.Config {
		return history.Config{Scope: scope, Noun: noun, Retain: cfg.Versions.Retain, MaxBytes: cfg.Versions.MaxBytes,
			Protected: protected, AdminToken: opts.AdminToken, OnChange: func(id string) {
				if hs.onChange != nil {
					hs.onChange(Kind(noun), id)
				}
			}}
	}
	hs.skills = history.New(st, hc(cfg.Scopes.Skills, "skill"))
	pc := hc(cfg.Scopes.Prompts, "prompt")
	pc.ListContent = true // a reader checks a prompt version's signature over it
	hs.prompts = history.New(st, pc)
	return hs
}

// servedSkill is what a read of row's id serves when that is not row
// itself: the serve label's version, or the newest version not yanked
// (history.Serving), with its registration time; or nothing when every
// version of the id is yanked.
func (hs *histories) servedSkill(row registry.StoredSkill) published.Served {
	n, pinned, withdrawn := hs.skills.Serving(row.ID, hs.serveLabel)
	if withdrawn != "" {
		return published.Served{Withdrawn: true}
	}
	if !pinned {
		return published.Served{}
	}
	body, err := hs.skills.Content(row.ID, n)
	if err != nil || body == row.Skill {
		return published.Served{}
	}
	return published.Served{Body: body, At: hs.skills.VersionTime(row.ID, n), Pinned: true}
}

// repairHistory settles history against what is served, once after the
// first cache load (see history.History.Repair): crash leftovers, and
// content written before history existed or straight into state.
func (l *Local) repairHistory(ctx context.Context) {
	l.hist.repairOnce.Do(func() {
		go func() {
			if err := l.repairSkills(); err != nil {
				l.log.Warn("skill history repair failed", "err", err)
			}
			if err := l.repairPrompts(ctx); err != nil {
				l.log.Warn("prompt history repair failed", "err", err)
			}
			// The pass read a row of every id: keep those pages out of
			// the resident set.
			if d, ok := l.state.(interface{ DropMapped() }); ok {
				d.DropMapped()
			}
		}()
	})
}

// repairParallelism bounds the repair's concurrent writes: enough to share
// group commits at a first start over many skills.
const repairParallelism = 16

func (l *Local) repairSkills() error {
	ids := map[string]bool{}
	for _, id := range l.skills.IDs() {
		ids[id] = true
	}
	known, err := l.hist.skills.IDs()
	if err != nil {
		return err
	}
	for _, id := range known {
		ids[id] = true
	}
	return forEachParallel(ids, func(id string) error {
		return l.hist.skills.Repair(id, "recorded at start-up", func() (string, bool) {
			row, ok := l.skills.Row(id)
			return row.Skill, ok
		})
	})
}

func (l *Local) repairPrompts(ctx context.Context) error {
	rows, err := l.storedPrompts(ctx)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, p := range rows {
		names[p.Name] = true
	}
	known, err := l.hist.prompts.IDs()
	if err != nil {
		return err
	}
	for _, n := range known {
		names[n] = true
	}
	return forEachParallel(names, func(name string) error {
		return l.hist.prompts.Repair(name, "recorded at start-up", func() (string, bool) {
			// Read again under the name's lock: the listing above may be
			// older than a register made since.
			raw, ok, err := l.state.Get(ctx, l.cfg.Scopes.Prompts, name)
			if err != nil || !ok {
				return "", false
			}
			p := storedPromptOf(raw)
			if p == nil {
				return "", false
			}
			return promptDefinition(p.Description, p.FunctionID, p.Arguments), true
		})
	})
}

func forEachParallel(ids map[string]bool, fn func(string) error) error {
	work := make(chan string)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range repairParallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if err := fn(id); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
					mu.Unlock()
				}
			}
		}()
	}
	for id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// promptDefinition is a prompt's versioned content: its canonical JSON
// (rules.CanonicalPrompt, docs/trust.md), the bytes its signature covers,
// so equal definitions are equal bytes and a version's sha256 is the
// digest of what was signed.
func promptDefinition(description, functionID string, args []registry.PromptArgument) string {
	ca := make([]rules.PromptArg, len(args))
	for i, a := range args {
		ca[i] = rules.PromptArg{Name: a.Name, Description: a.Description, Required: a.Required}
	}
	return string(rules.CanonicalPrompt(description, functionID, ca))
}

// decodePromptDefinition reads a prompt version's content back.
func decodePromptDefinition(content string) (description, functionID string, args []registry.PromptArgument, err error) {
	var d struct {
		Arguments   []registry.PromptArgument `json:"arguments"`
		Description string                    `json:"description"`
		FunctionID  string                    `json:"function_id"`
	}
	if err := json.Unmarshal([]byte(content), &d); err != nil {
		return "", "", nil, fmt.Errorf("stored prompt definition does not decode: %w", err)
	}
	return d.Description, d.FunctionID, d.Arguments, nil
}
