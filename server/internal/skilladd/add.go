package skilladd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
)

// maxMessageBytes is the registry's cap on a version's message
// (skills::register refuses a longer one).
const maxMessageBytes = 4096

// Caller calls one registry function (over iii) and returns its answer.
type Caller func(ctx context.Context, fn string, payload any) (json.RawMessage, error)

// Statuses of an Added skill.
const (
	StatusRegistered = "registered" // a new version was registered
	StatusUnchanged  = "unchanged"  // the newest version already holds this body
	StatusUndone     = "undone"     // registered, then undone: a later skill of its SOURCE was refused
)

// Added is one skill after Add.
type Added struct {
	Skill
	Status string `json:"status"`
	// Version is the version that holds the body (0 when undone).
	Version int `json:"version,omitempty"`
	// Shadows names the folder or bundle skill at the same id that the
	// published one now hides (a published skill wins its id).
	Shadows string `json:"shadows,omitempty"`
}

// SourceReport is what Add did with one SOURCE.
type SourceReport struct {
	Source string   `json:"source"`
	Skills []Added  `json:"skills"`
	Notes  []string `json:"notes,omitempty"`
}

// Report is what Add did, SOURCE by SOURCE, in order.
type Report struct {
	Sources []SourceReport `json:"sources"`
}

// listedRow is a skills::list row.
type listedRow struct {
	ID     string `json:"id"`
	Origin *struct {
		Kind   string `json:"kind"`
		Path   string `json:"path"`
		Source string `json:"source"`
	} `json:"origin"`
}

// versionsAnswer is the part of skills::versions Add reads.
type versionsAnswer struct {
	Latest   int `json:"latest"`
	Versions []struct {
		Version int    `json:"version"`
		SHA256  string `json:"sha256"`
		Key     string `json:"key"` // the signing key's fingerprint, "" unsigned
	} `json:"versions"`
}

// done is a registration Add may have to undo.
type done struct {
	id        string
	published bool // the id was published before
	previous  int  // its newest version then
}

// Add registers the planned skills, SOURCE by SOURCE. A SOURCE is all or
// nothing: when the registry refuses one of its skills (another worker
// holds the id, a scoped token does not cover it, the connection is
// lost), the skills of that SOURCE registered before it are undone (an
// id that was new is unregistered; one that existed gets its previous
// version's content back as a new version, skills::rollback) and Add
// stops: the SOURCEs before it stay added, the ones after it are not
// tried. The report says which is which, also when it returns an error.
func Add(ctx context.Context, call Caller, plans []Planned, o Options) (*Report, error) {
	raw, err := call(ctx, rules.FnSkillsList, map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rules.FnSkillsList, err)
	}
	var listing struct {
		Skills []listedRow `json:"skills"`
	}
	if err := json.Unmarshal(raw, &listing); err != nil {
		return nil, fmt.Errorf("%s answered %.200s: %w", rules.FnSkillsList, raw, err)
	}
	rows := map[string]listedRow{}
	for _, r := range listing.Skills {
		rows[r.ID] = r
	}
	rep := &Report{}
	for _, p := range plans {
		sr := SourceReport{Source: p.Arg, Notes: p.Notes}
		var did []done
		var failed error
		for _, s := range p.Skills {
			a, d, err := addOne(ctx, call, s, rows[s.ID], o)
			if err != nil {
				failed = fmt.Errorf("%s: skill %s: %w", p.Arg, s.ID, err)
				break
			}
			sr.Skills = append(sr.Skills, a)
			if d != nil {
				did = append(did, *d)
			}
		}
		if failed != nil {
			undoErr := undo(ctx, call, did, p.Arg)
			for i := range sr.Skills {
				if sr.Skills[i].Status == StatusRegistered {
					sr.Skills[i].Status, sr.Skills[i].Version = StatusUndone, 0
				}
			}
			rep.Sources = append(rep.Sources, sr)
			if undoErr != nil {
				return rep, fmt.Errorf("%w; undoing the skills of %s registered before it failed too: %v", failed, p.Arg, undoErr)
			}
			return rep, fmt.Errorf("%w; the skills of %s registered before it were undone, and no later SOURCE was tried", failed, p.Arg)
		}
		rep.Sources = append(rep.Sources, sr)
	}
	return rep, nil
}

// addOne registers one skill unless its newest version holds the same
// body.
func addOne(ctx context.Context, call Caller, s Skill, row listedRow, o Options) (Added, *done, error) {
	a := Added{Skill: s}
	published := row.ID != "" && row.Origin == nil
	if row.Origin != nil && row.Origin.Kind != "published" {
		a.Shadows = row.Origin.Kind + " " + row.Origin.Path
		if row.Origin.Source != "" {
			a.Shadows = row.Origin.Kind + " " + row.Origin.Source + "/" + row.Origin.Path
		}
	}
	previous := 0
	if published {
		v, err := versions(ctx, call, s.ID)
		if err != nil {
			return a, nil, err
		}
		previous = v.Latest
		// Unchanged: the newest version holds this body, signed by this
		// key when signing (the same body signed by another key, or
		// unsigned, is a new version: the history shows who vouched).
		if len(v.Versions) > 0 && v.Versions[0].Version == v.Latest && v.Versions[0].SHA256 == s.SHA256 &&
			(o.Signer == nil || v.Versions[0].Key == ssh.FingerprintSHA256(o.Signer.PublicKey())) {
			a.Status, a.Version = StatusUnchanged, v.Latest
			return a, nil, nil
		}
	}
	payload := map[string]any{"id": s.ID, "skill": s.Body, "message": s.Message}
	if o.Author != "" {
		payload["author"] = o.Author
	}
	if o.Signer != nil {
		sig, err := sshsig.Sign(o.Signer, []byte(s.Body), rules.SignatureNamespace)
		if err != nil {
			return a, nil, err
		}
		payload["signature"] = string(sig)
	}
	wait := o.OwnerWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		_, err := call(ctx, rules.FnSkillsRegister, payload)
		var ie *iii.InvocationError
		if err != nil && errors.As(err, &ie) && ie.Code == rules.CodeForbidden && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return a, nil, ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return a, nil, err
		}
		break
	}
	d := &done{id: s.ID, published: published, previous: previous}
	v, err := versions(ctx, call, s.ID)
	if err != nil {
		return a, d, err
	}
	a.Status, a.Version = StatusRegistered, v.Latest
	return a, d, nil
}

func versions(ctx context.Context, call Caller, id string) (versionsAnswer, error) {
	var v versionsAnswer
	raw, err := call(ctx, rules.FnSkillsVersions, map[string]any{"id": id})
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("%s answered %.200s: %w", rules.FnSkillsVersions, raw, err)
	}
	return v, nil
}

// undo takes back the registrations of a refused SOURCE, newest first.
func undo(ctx context.Context, call Caller, did []done, source string) error {
	// The SOURCE failed, maybe because ctx ended: undo on a context of
	// its own so the registry is not left half-way.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []string
	for i := len(did) - 1; i >= 0; i-- {
		d := did[i]
		var err error
		if d.published {
			_, err = call(uctx, rules.FnSkillsRollback, map[string]any{"id": d.id, "version": d.previous,
				"message": fmt.Sprintf("skills add: undone, back to version %d (%s was refused)", d.previous, source)})
		} else {
			_, err = call(uctx, rules.FnSkillsUnregister, map[string]any{"id": d.id})
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", d.id, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
