package app

import (
	"log/slog"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// startFolders opens the skills folders (skills_folder, or --skills-folder),
// feeds them into cat and registers the iii-directory
// surface on client (returned, to be told whether the engine stamps
// callers). With no folder configured it does nothing and returns a nil
// directory and a no-op stop.
// Bundles that ask for secrets no grant gives them load and run without
// them; sp reports them (log, and warnings of directory::skills::diagnostics).
func startFolders(client *iii.Client, cat *catalog.Catalog, cfg DirectoryConfig, sp *skillsprotocol.Runtime, log *slog.Logger) (dir *directory.Directory, stop func(), err error) {
	folders := []string(cfg.SkillsFolder)
	if len(folders) == 0 {
		return nil, func() {}, nil
	}
	set, err := fsource.Open(fsource.Options{Folders: folders, Catalog: cat, Logger: log, Watch: true,
		Bundle:        func(b fsource.BundleDir, e *catalog.Entry) error { return skillsprotocol.CompleteEntry(b.Manifest, e) },
		BundleWarning: sp.ReportUngranted})
	if err != nil {
		return nil, nil, err
	}
	dir = directory.New(client, set, cat, cfg.runtime(), directory.Options{Logger: log})
	if err := dir.Register(); err != nil {
		set.Close()
		return nil, nil, err
	}
	log.Info("iii-directory ready: 15 directory::* functions + 2 custom trigger types (+ " + directory.FnSkillsDiagnostics + ")")
	for _, f := range set.Folders() {
		log.Info("serving skills folder", "folder", f.Root, "skills", f.Skills, "prompts", f.Prompts, "skipped", f.Problems,
			"diagnostics", "skills trigger --function-id "+directory.FnSkillsDiagnostics)
	}
	return dir, func() { dir.Close(); set.Close() }, nil
}
