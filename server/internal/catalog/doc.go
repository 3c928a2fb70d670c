// Package catalog is the one in-memory set of skills that every source
// feeds and every surface reads. It is pure data and rules: no transport,
// no filesystem walking. Sources (the worker's state-backed "published"
// registry, skills folders, Skills Protocol bundles, built-ins) build
// Entries and put them; surfaces (skill::fetch and the registry functions,
// directory::*, MCP, the Skills Protocol runtime, the MCP Skills
// extension) read them and subscribe to changes.
//
// # Entries
//
// An Entry is one version of one skill:
//
//   - ID: an iii skill id ('/'-separated, checked with registry.ValidateID);
//     Version: a semantic version ("1.2.0", ValidateVersion) or "" for
//     unversioned; Kind: KindInstruction or KindAction.
//   - Title/HasTitle and Description/HasDescription: the body's first H1
//     and its whole first paragraph (Entry.SetSummary). The description is
//     untruncated; Entry.IndexEntry cuts it at 140 characters for the
//     iii://skills index, the iii://directory/skills index does not.
//   - Frontmatter: the raw YAML text and the parsed mapping with key order
//     kept (Map; ParseFrontmatter, SplitFrontmatter with the iii-directory
//     v0.5 fence rules).
//   - Body: the markdown with the frontmatter stripped, as Content (Inline
//     in memory, or Lazy with a Loader that reads on demand); BodyDigest.
//   - Files: the skill's files sorted by Path ('/'-separated, relative to
//     the skill root; SKILL.md included for folder skills), each with Size,
//     Digest (sha256, computed once by the source when it loads or sees a
//     change, never on the read path; String() is "sha256:<hex>"), MIME
//     (MIMEType), Modified and Content. Entry.File(path) finds one; Main
//     names the main markdown file (Entry.MainFile).
//   - Origin{Kind, Source, Path}: OriginPublished, OriginFolder (Source =
//     folder root, Path = main file relative to it), OriginBundle,
//     OriginBuiltin. Modified time. Extra: opaque per-source data (the
//     parsed skill.toml of a bundle).
//
// An Entry handed to Source.Put (of one source only) belongs to the
// catalog and is shared with readers: it is never changed afterwards. A
// change is a new Entry.
//
// # Sources and precedence
//
// AddSource(name, rank) registers a source; a lower rank wins (constants
// RankPublished < RankFolder+i < RankBuiltin: a skill a worker publishes
// beats folder skills, the earlier folder beats a later one, built-ins
// come last). A source writes with Put (add or replace by id and
// version), Remove (every version of ids), RemoveVersion and Replace (its
// whole content; unchanged pointers cause no event).
//
// The owner of an id is the best-ranked source holding it; the effective
// entry is the owner's highest version (CompareVersions: "" sorts below
// every version). Other sources' entries at that id are shadowed:
// Shadowed and ShadowedAt report them with the owner's name.
//
// # Reads
//
// Get(id) is the effective entry; Owner(id) its source; GetVersion and
// Versions(id) (highest first) read the owner's versions; List() is every
// effective entry sorted bytewise by id, a shared snapshot rebuilt only
// after a change (do not modify it); AllVersions() is every version of
// every id from its owner, for the Skills Protocol; Holders(id) is each
// holding source's highest version in precedence order; Sources() describes
// the sources; Generation() grows with each change, for caching renders.
// Reads take a read lock and never wait for a reader; writers hold the
// write lock only for map updates.
//
// # Change events
//
// Subscribe(fn) calls fn with a Change {ID, Op (OpPut / OpRemove), Entry
// (new effective, nil on remove), Previous, Cause (the writing source),
// Generation} each time an id's effective entry changes: content, owner
// or version. Each subscriber has its own goroutine and unbounded queue,
// so delivery is in write order and a slow subscriber never blocks a
// writer. A write of many entries delivers its changes in id order.
package catalog
