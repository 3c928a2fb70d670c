package core

import (
	"context"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// The catalog as the MCP Skills extension serves it (package skillsext):
// the registry keeps one view of its catalog, following its changes, and
// its published skills' versions are served at skill://<id>@<version>.

// CatalogSkills implements Registry.
func (l *Local) CatalogSkills(ctx context.Context, after string, limit int) ([]skillsext.Skill, bool, error) {
	return l.view.ListSkills(ctx, after, limit)
}

// CatalogSkill implements Registry.
func (l *Local) CatalogSkill(ctx context.Context, path string) (skillsext.Skill, bool, error) {
	return l.view.Skill(ctx, path)
}

// CatalogFile implements Registry.
func (l *Local) CatalogFile(ctx context.Context, path, file string) ([]byte, error) {
	b, err := l.view.ReadFile(ctx, path, file)
	if err == nil {
		l.CountCatalogRead(ctx, path, file, 0)
	}
	return b, err
}

// CatalogFileVersion is CatalogFile with the digest of the bytes returned,
// which names the version served (skills::catalog-file sends files in
// chunks and refuses one of another version).
func (l *Local) CatalogFileVersion(path, file string) ([]byte, catalog.Digest, error) {
	return l.view.ReadFileVersion(path, file)
}
