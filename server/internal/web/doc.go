// Package web is the registry's web page, served at / of the HTTP listener
// beside /mcp and /rpc: the catalog as a tree by namespace, a search box,
// a page per skill (rendered markdown, frontmatter, files, URIs), prompts
// with a form that renders one, folder diagnostics and connected workers.
//
// Pages are rendered on the server with html/template and read without
// JavaScript; one static script (assets/app.js) adds live search and live
// updates: the page listens to /events, a server-sent event stream fed by
// the catalog's change stream, and swaps the changed region in place.
//
// Everything shown comes from untrusted publishers and folders, so:
//
//   - markdown is rendered by goldmark with raw HTML off, and every link
//     and image destination passes an allowlist (http, https, mailto,
//     relative; iii:// and skill:// become links inside the page);
//     anything else is rendered as text;
//   - every response carries a strict Content-Security-Policy (scripts
//     only from /assets/, no inline script, no objects, no frames, no
//     base), X-Content-Type-Options: nosniff and Referrer-Policy;
//   - the listener's Host and Origin rules (httpguard) apply to every
//     request, and its token to every page when one is configured (a
//     browser presents it once through the sign-in form, which keeps it in
//     an HttpOnly SameSite=Strict cookie, Secure when the page is served
//     over TLS, behind a TLS proxy too with Options.PublicOrigin);
//   - actions that change the catalog (unregistering a published skill,
//     moving a label, rolling back) are same-origin POSTs carrying a CSRF
//     token and the listener token, and call the same iii functions a
//     worker or the CLI calls (skills::unregister, skills::label,
//     skills::rollback); the page sends the registry's admin token only
//     when the operator gave it one (Options.AdminToken).
//
// The page reads the catalog in-process and everything else the way a
// client would, over iii: prompts (prompts::mcp-list, prompts::mcp-get,
// directory::prompts::*), diagnostics (directory::skills::diagnostics),
// workers (engine::workers::list) and the versions of published skills and
// prompts (skills::versions, skills::diff, skill::fetch iii://id@N; see
// versions.go). Version and label changes reach open pages through
// Options.VersionChanges, fed in-process by the registry's history.
package web
