package core

import "github.com/iii-skills/skills/server/internal/history"

// PrivateScopes are the state scopes only the registry writes: the
// version history of skills and prompts (immutable versions, heads with
// their labels) and the cluster generation counter (package cluster). The served rows
// (Scopes.Skills, Scopes.Prompts) are not among them: upstream's harness
// and operators clean those up with state::delete, and the registry
// follows such writes. The embedded engine refuses writes to these from
// every connection but the registry's own (engine.Config.PrivateScopes).
func (c Config) PrivateScopes() []string {
	return []string{
		history.HeadsScope(c.Scopes.Skills), history.VersionsScope(c.Scopes.Skills),
		history.HeadsScope(c.Scopes.Prompts), history.VersionsScope(c.Scopes.Prompts),
		generationScope(c.Scopes),
	}
}

// generationScope holds the cluster's generation counter (package cluster).
func generationScope(s Scopes) string { return s.Skills + ".cluster" }
