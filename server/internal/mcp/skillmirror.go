package mcp

import (
	"context"
	"fmt"

	"github.com/iii-skills/skills/server/internal/skillsext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// skillMDResource is the resources/list entry of a skill's SKILL.md: name
// and description from its frontmatter, as the extension recommends.
func skillMDResource(e skillsext.Skill) sdk.Resource {
	r := sdk.Resource{URI: SkillURI(e.Path, SkillFileName), MIMEType: mimeMarkdown, Meta: originMeta(e.Origin)}
	r.Name, r.Description = e.Name, e.Description
	for _, f := range e.Files {
		if f.Path == SkillFileName {
			r.Size = f.Size
		}
	}
	if r.Name == "" {
		r.Name = e.Path
	}
	return r
}

// fileURIs are the URIs of every file of e (SKILL.md at least).
func fileURIs(e skillsext.Skill) []string {
	out := []string{SkillURI(e.Path, SkillFileName)}
	for _, f := range e.Files {
		if f.Path != SkillFileName {
			out = append(out, SkillURI(e.Path, f.Path))
		}
	}
	return out
}

// allSkills walks the backend's whole listing: a backend may answer in
// pages even when asked for all (core.Remote stops an answer at a
// byte budget), so it asks again after the last path while more follow.
func (s *Server) allSkills(ctx context.Context) ([]skillsext.Skill, error) {
	var all []skillsext.Skill
	after := ""
	for {
		page, more, err := s.registry.CatalogSkills(ctx, after, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if !more {
			return all, nil
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("skill listing after %q: the backend reported more skills but sent none", after)
		}
		after = page[len(page)-1].Path
	}
}

// syncSkills loads the whole skill:// mirror (at start and on reconnect).
// A skill that a change event handled while the listing was read keeps
// what that event decided; every skill the resync drops gets
// resources/updated for its files, as onSkillChanged would have sent.
func (s *Server) syncSkills(ctx context.Context) error {
	if !s.skillExt {
		return nil
	}
	s.skillSyncMu.Lock()
	defer s.skillSyncMu.Unlock()
	s.skillMu.Lock()
	s.skillSyncing = true
	s.skillMu.Unlock()
	defer func() {
		s.skillMu.Lock()
		s.skillSyncing = false
		clear(s.skillTouched)
		s.skillMu.Unlock()
	}()
	all, err := s.allSkills(ctx)
	if err != nil {
		return err
	}
	next := make(map[string][]string, len(all))
	entries := make(map[string]skillsext.Skill, len(all))
	for _, e := range all {
		if e.Problem != "" {
			s.log.Warn("MCP: skill not served over the Skills extension", "skill", e.Path, "reason", e.Problem)
			continue
		}
		next[e.Path] = fileURIs(e)
		entries[e.Path] = e
	}
	s.skillMu.Lock()
	for p := range s.skillTouched {
		if cur, ok := s.skillFiles[p]; ok {
			next[p] = cur
		} else {
			delete(next, p)
		}
		delete(entries, p)
	}
	for p := range next {
		if e, listed := entries[p]; listed {
			if _, had := s.skillFiles[p]; !had {
				r := skillMDResource(e)
				s.sdk.AddResource(&r, s.readResourceHandler)
			}
		}
	}
	var removed, gone []string
	for p, uris := range s.skillFiles {
		if _, ok := next[p]; !ok {
			removed = append(removed, SkillURI(p, SkillFileName))
			gone = append(gone, uris...)
		}
	}
	if len(removed) > 0 {
		s.sdk.RemoveResources(removed...)
	}
	s.skillFiles = next
	s.skillMu.Unlock()
	for _, uri := range gone {
		_ = s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
	}
	return nil
}

// onSkillChanged applies one catalog change: the skill's SKILL.md entry is
// re-added (the SDK sends notifications/resources/list_changed) or removed,
// and every file URI it had or has gets notifications/resources/updated,
// so a digest a client cached is never silently stale.
func (s *Server) onSkillChanged(ctx context.Context, skillPath string) {
	e, found, err := s.registry.CatalogSkill(ctx, skillPath)
	if err != nil {
		s.log.Warn("MCP: cannot read a changed skill", "skill", skillPath, "err", err)
		return
	}
	s.skillMu.Lock()
	if s.skillSyncing {
		s.skillTouched[skillPath] = struct{}{}
	}
	old := s.skillFiles[skillPath]
	var now []string
	mdURI := SkillURI(skillPath, SkillFileName)
	switch {
	case found && e.Problem == "":
		now = fileURIs(e)
		s.skillFiles[skillPath] = now
		r := skillMDResource(e)
		s.sdk.AddResource(&r, s.readResourceHandler)
	default:
		if found {
			s.log.Warn("MCP: skill not served over the Skills extension", "skill", skillPath, "reason", e.Problem)
		}
		delete(s.skillFiles, skillPath)
		if old != nil {
			s.sdk.RemoveResources(mdURI)
		}
	}
	s.skillMu.Unlock()
	seen := make(map[string]bool, len(old)+len(now))
	for _, uri := range append(old, now...) {
		if !seen[uri] {
			seen[uri] = true
			_ = s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
