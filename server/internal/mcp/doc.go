// Package mcp serves the skills registry to MCP clients (Claude Code,
// Claude Desktop, Cursor, any agent built on an MCP SDK) over the official
// Go MCP SDK (github.com/modelcontextprotocol/go-sdk).
//
// The server answers from a core.Registry: core.Local in the registry's
// own process (`skills --standalone`, `skills --url`: no engine hop, no
// re-encoding of a body) or core.Remote over iii in another (`skills mcp`,
// against our registry or upstream's):
//
//	resources/list            Registry.Resources (index first, then every skill, nested included; paginated)
//	resources/read            Registry.Read (any iii:// URI, iii://fn/… sections included)
//	resources/templates/list  Registry.Templates
//	prompts/list              Registry.MCPPrompts
//	prompts/get               Registry.GetPrompt (the prompt's handler renders it, through the engine)
//	tools/list                engine::functions::list minus the hidden namespaces, "::" → "__",
//	                          read-only tools only unless Options.AllowSideEffects (exposure.go)
//	tools/call                the function itself, through the engine
//
// Every tool is classified in one table (toolClasses in exposure.go) that
// sets its MCP annotations and whether it is exposed by default; every read
// that can end in an iii://fn/ section call goes through checkSection.
//
// With Options.SkillsExtension, every skill of the registry's catalog is
// also served the MCP Skills extension's way (io.modelcontextprotocol/skills):
// skills/list, skills/get and resources/directory/read (go-sdk custom
// methods, registered with AddReceivingCustomMethod: see skillsext.go),
// skill://<id>/<file> reads, and the list_skills/read_skill tools for
// clients without resource support (Registry.CatalogSkills, CatalogSkill,
// CatalogFile).
//
// # Live updates
//
// The go-sdk server holds a mirror of the registry's resources, prompts and
// tools; adding or removing mirror entries makes the SDK send
// notifications/{resources,prompts,tools}/list_changed to every session
// (stateful 2025-11-25 sessions on their stream, 2026-07-28 clients on their
// subscriptions/listen stream). The mirror follows the registry through
// Registry.Watch (in-process, or skills::on-change, prompts::on-change and
// skills::catalog-on-change over iii) and follows the function set through
// engine::functions-available when the engine provides that trigger type,
// else by polling engine::functions::list. A skill change also sends
// notifications/resources/updated for iii://{id} and for the iii://skills
// index to sessions subscribed to them.
//
// A skills::on-change event is applied to its one resource; the whole mirror
// is loaded only at start and on reconnect. Lists and reads are always
// answered live from the registry, so a client never sees a stale mirror.
//
// # Transports
//
// HTTPHandler serves MCP Streamable HTTP for both protocol revisions:
// requests whose MCP-Protocol-Version header is 2026-07-28 or later go to a
// stateless go-sdk handler (the only mode in which go-sdk speaks the
// sessionless 2026-07-28 protocol); everything else (the 2025-11-25
// initialize handshake, Mcp-Session-Id requests, the GET notification
// stream, DELETE) goes to a stateful handler of the same server. Both check
// Origin and, when a token is configured, the bearer token. ServeStdio
// serves one client over stdin/stdout.
package mcp
