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
//     which the MCP server shows in each listing's _meta.
//
// View reads a catalog in-process (the MCP server inside the skills
// process). Register publishes the same view to other processes over iii
// as internal registry functions, and Remote reads them (`skills mcp`):
//
//	skills::catalog-list  {after?, limit?, max_bytes?}  → {skills: [Skill], more}
//	skills::catalog-get   {path}                        → {skill: Skill | null}
//	skills::catalog-file  {path, file, offset?, sha256?, max_bytes?}
//	                                                    → {data: base64, size, sha256}
//	skills::catalog-on-change (trigger type) fires {path} on every change
//
// Answers stay well under the engine's 16 MiB frame limit: a listing stops
// at about 4 MiB of skills (more: true), a file comes 4 MiB at a time
// (max_bytes asks for less). A chunk request naming the sha256 of the
// first chunk is refused once the file has another version, so a reader
// never joins chunks of two versions.
//
// They live under skills::, a hidden namespace, and carry metadata
// internal: true, so they are never listed as MCP tools.
package skillsext
