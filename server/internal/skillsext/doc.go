// Package skillsext is the skill catalog as the MCP Skills extension
// (io.modelcontextprotocol/skills, SEP-2640) serves it: every catalog skill
// as a skill://<id>/ tree with SKILL.md, its files, their sizes and sha256
// digests.
//
//   - Folder skills keep their real SKILL.md and every supporting file;
//     the digests are the catalog's (computed once by the source).
//   - Published skills (skills::register) get a SKILL.md synthesized from
//     the body with frontmatter name (the id's last segment, which the
//     extension requires to equal the final path segment) and description
//     (the index description). Its frontmatter header, size, digest and
//     whether it is "dynamic" (a body linking to iii://fn/… sections) are
//     computed once per change, on first use; its bytes are assembled on
//     read from that header and the catalog's body, so the view holds no
//     second copy of any body.
//   - A skill over the extension's limits (512 files, 16 MiB), without a
//     description, or whose name is not a valid Agent Skills name is kept
//     with a Problem that says why it is not served.
//   - Every skill names its Origin (published, folder, bundle, builtin),
//     which the MCP server shows in each listing's _meta, and the SHA256 of
//     what it serves (a published skill's body, a skill with files' Manifest)
//     with, for published skills, the registry's facts of that version
//     (Facts: version, signer, yank, deprecation).
//   - A skill is also served at <id>@<selector>: a registry version of a
//     published skill (a number, a label, sha256:<hex>), or a skill with
//     files pinned by its manifest's digest while its files still hold
//     exactly that content (versions.go).
//
// View is the catalog's view, following its changes; the registry
// (core.Local) holds one and serves it in-process, and over iii to other
// processes (skills::catalog-list, -get, -file and the trigger type
// skills::catalog-on-change, package worker), where core.Remote reads it.
package skillsext
