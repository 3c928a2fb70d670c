// Package fsource serves skills and prompts from folders on disk: it scans
// them, feeds one catalog source per folder, keeps the folders' prompts,
// lists what it skipped and why, and, with Options.Watch, follows every
// change with fsnotify.
//
// # Layout of a folder
//
//   - <root>/**/<name>.md is an iii-directory v0.5 skill whose id is the
//     path without ".md" ("ns/a.md" → "ns/a", "indexed.md" → "indexed").
//     Frontmatter, when present, is stripped from the body and must be
//     valid YAML.
//   - A folder with a SKILL.md (below the root) is one Agent Skills skill
//     whose id is the folder's path ("pdf-processing", "team/pdf"). The
//     folder's name must be an Agent Skills name; the frontmatter must
//     pass ValidateAgentSkill (name equal to the folder name); metadata
//     that is not a map of strings is only a warning; the body may be
//     empty (the specification's minimal skill is frontmatter alone).
//     Every file under it (scripts/, references/, assets/ and
//     any other, nested or binary) is one of its Files; none of them is
//     scanned as a skill or prompt of its own.
//   - skill.md, or another letter case of SKILL.md, counts as SKILL.md
//     (the skills-ref validators accept skill.md; case-insensitive file
//     systems find either), is listed as SKILL.md, and is a warning. At
//     the folder's root such a file is a problem, not a skill "skill".
//   - A folder with a skill.toml is a Skills Protocol bundle, completed by
//     Options.Bundle (skipped and listed as a problem without one).
//   - A .md file with a path component "prompts" (outside skill folders)
//     is a prompt: frontmatter with a non-empty description, name from the
//     frontmatter or the file stem.
//   - Hidden names (".git", ".draft.md") and editors' temporary files
//     ("x.md~", "x.swp", "#x#", "4913", "x.tmp") are neither served nor
//     reported.
//
// Within one folder, an id claimed twice (a.md beside a/SKILL.md) is
// served by the skill folder; the other is listed as a duplicate. Between
// folders, the earlier folder wins (its catalog rank is lower); the
// catalog also lets a worker-published skill win over both.
//
// # Safety
//
// Every read goes through an os.Root of the folder, so no path, relative
// or symlinked, reaches outside it: a symlink that escapes is listed as a
// problem and never served. Symlinked directories are not followed.
// Markdown files are capped at 256 KiB (frontmatter included); an Agent
// Skills folder or bundle at 512 files and 16 MiB.
//
// # Memory
//
// Bodies and files stay on disk: an entry keeps its title, description,
// frontmatter and the sizes and sha256 digests of its files (computed once
// per scan), and reads content through lazy loaders. Loaders re-read the
// file and apply iii-directory's read errors ("read {path}: …", "file
// {path} is too large …", "file {path} has empty body" but for a SKILL.md).
//
// # Changes
//
// The watcher gathers events for Options.Debounce (20 ms), maps each path
// to the smallest scope that can have changed (the enclosing skill folder,
// or the file or folder itself; the whole folder when its root appears or
// goes) and rescans only that. Subscribe receives the resulting Events in
// order: a skill id or prompt name whose served file changed, after
// precedence between folders. Refresh and Rescan do the same on demand.
//
// # Problems
//
// Every skipped file is logged once per new reason ("skipped fs entry",
// file, reason) and listed by Problems until it is fixed or removed.
// What is served with a caveat (Agent Skills metadata that is not a map
// of strings, a skill file not named SKILL.md, Options.BundleWarning) is
// logged the same way ("served fs entry with a warning") and listed by
// Warnings.
package fsource
