// Package skilladd is `skills add SOURCE…`: it registers the skills of a
// folder, an archive or a git repository as published versions
// (skills::register), with their provenance.
//
// # Sources
//
// [ParseSource] reads a SOURCE: an existing folder or archive (.zip,
// .tar.gz, .tgz, .tar; told apart by their bytes), an archive to download
// (an http(s) URL whose path ends in one of those extensions: downloaded
// whole within a size cap and a timeout, then read as a file), a git URL (https://,
// http://, ssh://, git://, git@host:owner/repo) or owner/repo on a forge
// (Options.Forge, https://github.com/ by default), each with #ref and
// :subdir suffixes (repo#v1.2:skills/pdf). file:// URLs, transports that
// run programs (ext::) and anything starting with '-' are refused; a
// local repository is cloned only when named by its path with a #ref.
//
// # What is read, and how
//
// A folder of skills is scanned in place by fsource, the server's own
// folder scanner, so what is added is exactly what the server would serve
// from that folder. A folder that is one skill (SKILL.md inside), an
// archive and a repository go first through skillarchive's reading rules
// (names, links resolved inside the root into copies, special files,
// caps, decompression bombs) into a temporary folder, then through the
// same scanner. A repository is fetched with the real git into a
// temporary bare repository: one commit, depth 1, no tags, no
// submodules, no checkout (git writes no file of it, so no hook, filter
// or symlink of the repository ever acts), no hooks, file:// refused but
// for a local path the user named, a size cap on the fetch; its tree is
// then read with git ls-tree and git cat-file, a submodule refused with
// its URL named. A source that is one skill names its folder after
// itself: the folder, the :subdir, the repository or the archive.
//
// # What a published skill can hold
//
// The registry stores one markdown body per skill id. What is registered
// is SKILL.md (or the .md file) without its frontmatter: exactly what
// skill::fetch serves for the same skill in a folder. What is lost, and
// listed in each Skill's LeftOut:
//
//   - the frontmatter: a published skill's name is its id's last segment
//     (the folder name, so the same), its description the body's first
//     paragraph, not the frontmatter's description; license,
//     compatibility, allowed-tools, metadata and other keys are dropped;
//   - supporting files (scripts/, references/, assets/, …): a skill that
//     has any is refused unless Options.SkipFiles, which registers its
//     SKILL.md alone.
//
// # All or nothing
//
// [Plan] checks every SOURCE and every skill before anything is
// registered: any refusal (a hostile archive, a problem the server would
// list, a body over 256 KiB, an id given twice) stops everything, each
// reason named with its source and path. [Add] then registers SOURCE by
// SOURCE; a SOURCE the registry refuses part-way is undone (see Add).
//
// # Provenance
//
// Each version's message carries one line ([Provenance.Line]), e.g.
//
//	skills add: git https://github.com/o/r ref=v1 commit=<sha> path=skills/pdf
//
// which [ParseProvenance] reads back; the same is returned as
// [Provenance] fields, for a registry whose history stores them.
package skilladd
