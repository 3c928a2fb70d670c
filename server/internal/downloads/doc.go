// Package downloads serves the registry's skills as files over HTTP, on
// the listener of /mcp: the Agent Skills discovery index of RFC v0.2.0
// (agentskills.io/well-known-uri) and every skill, or a version of it, as
// its SKILL.md, a .zip or a .tar.gz. It reads through core.Registry (the
// catalog as the MCP Skills extension serves it: files with their sha256),
// never through the engine, and applies the listener's Origin, Host and
// token rules (the door of /mcp).
//
// # Paths
//
// A skill path is <id> or <id>@<selector>: a version number, a label
// (latest, production, …) or sha256:<64 hex> (docs/versions.md,
// docs/trust.md). Ids hold only [a-z0-9_-] and '/', labels
// [a-z0-9._-], so the format suffix, always present, is cut once from the
// end and what is left is the skill path:
//
//	GET /.well-known/agent-skills/index.json                the discovery index
//	GET /.well-known/agent-skills/<skill path>/SKILL.md     SKILL.md alone (text/markdown)
//	GET /.well-known/agent-skills/<skill path>.zip|.tar.gz  the skill's folder at the archive's root (the RFC's layout)
//	GET /archive/<skill path>.zip|.tar.gz                   one top folder named after the skill (the upload layout of the Anthropic and OpenAI skills APIs)
//
// HEAD works wherever GET does. Errors are plain text: 400 for a path that
// cannot name a skill (an invalid id, a malformed selector), 404 naming the
// id or the selector the registry does not serve, 409 for a skill that has
// no fixed content (a published skill linking to live iii://fn/ sections),
// 503 with Retry-After while the server holds as many downloads as it
// allows.
//
// # The index
//
// It lists, in id order, every skill the MCP Skills extension serves (no
// Problem: a valid Agent Skills name equal to the id's last segment, a
// description, within 512 files and 16 MiB), except: a skill linking to
// live iii://fn/ sections (no fixed content to copy); a description over
// 1024 characters (the RFC's bound); and every skill whose name another
// listed skill also has (acme/pdf and globex/pdf): an RFC client installs
// by name, so listing either would let one namespace replace what another
// namespace's readers install. Those stay downloadable by id. Shadowed
// skills are not served at their id anywhere, nor here; a yanked version is
// never what a read without a selector serves, so never what the index
// lists (an id whose every version is yanked serves nothing); a deprecated
// skill is listed (it still serves) and its downloads carry the message.
//
// An entry is "skill-md" for a skill with SKILL.md alone, else "archive"
// (.zip). Its url is relative to the index and pinned by the content's
// digest (./acme/pdf@sha256:<hex>.zip), so a client that reads the index,
// then the artifact, gets the bytes the entry's digest names even when the
// skill changes in between; the artifact's digest is of its bytes, as the
// RFC says. The index is built per request (the archives' digests are kept
// per content), so it never lags the catalog; its ETag is its sha256.
//
// # Headers
//
// Every artifact has ETag "sha256:<hex of its bytes>" and Repr-Digest
// (RFC 9530), Skill-Id, Skill-Sha256 (the digest a pin @sha256: names),
// and where they apply Skill-Version, Skill-Yanked, Skill-Deprecated.
// Cache-Control: no-cache (revalidate: If-None-Match gives 304) except for
// sha256 pins, whose content never changes (max-age a year, immutable);
// private when the listener needs a token. Archives are attachments with a
// file name made of the id's last segment and the selector
// (pdf-production.zip, pdf-sha256-9f86d081884c.zip).
//
// # Limits
//
// Archives are written while they are sent, one file of the skill in
// memory at a time, each checked against its digest (a file that changed
// since the skill was listed ends the download: the client sees a short
// body, never other content under the announced digest). The memory
// downloads hold is shared between clients (budget: a client at most a
// quarter), waiting in arrival order up to QueueWait; a client that reads
// nothing for Stall, or takes longer than MaxDuration in all, is cut off.
package downloads
