// Package skillsprotocol is the Skills Protocol runtime (seed 002,
// skillsprotocol.com v0.1): the 8 tools as JSON-RPC 2.0 methods at one
// HTTP endpoint (/rpc), over the shared skill catalog.
//
// Discovery (list_skills, describe_skill, read_skill_file) reads every
// catalog entry: Skills Protocol bundles (skill.toml + SKILL.md + code/ +
// resources/) from folders (LoadFolders) or published over iii
// (skills::publish-bundle, durable in the server's own store, see
// StoreFile: never in engine state, where any engine client could read
// or rewrite them), and every other catalog skill (iii-published,
// Agent Skills, iii-directory folders) as an instruction skill. Names map
// one-to-one: the iii id resend/email/send is the Skills Protocol name
// resend.email.send (NameToID, IDToName); bundle names are strict
// (lowercase letters, digits and dots), mapped names keep the '-' and '_'
// of iii ids. Entries without a version appear as 0.0.0.
//
// Execution (execute_skill, run_code) runs Python in a fresh
// server/internal/sandbox per run, with only the secrets Options.SecretGrants give
// the bundle's name and origin; blobs (create_blob, read_blob) are stored
// in the server's own store ("skills-protocol-blobs", with a size/age index in
// "skills-protocol-blobs-index" so Options.BlobTTL and
// Options.MaxBlobStoreBytes hold without reading contents); load_skills_protocol_guide
// returns the SKILL.md of the built-in skills.protocol.guide 0.1.0, an
// instruction skill the runtime serves beside the catalog (so the iii
// registry surfaces, which read the same catalog, do not list it).
//
// Shares: request bodies and big answers draw on one budget across
// requests (answers.go, Options.AnswerBudget), sandboxes, blobs and
// published bundles have a share per client (an HTTP address, or a
// publisher's connection or scoped token), and skills::unpublish-bundle
// frees a publisher's (unpublish.go).
//
// Runs: each is a fresh sandbox (at most ConcurrentRuns at once, a share
// per client) with the
// Python runner of pylib/ (sp_runner.py calls the entrypoint as fn(args)
// and reports one JSON document; prints are the logs) and the runtime
// helper module; outputs or logs over BlobThreshold become blobs; finished
// runs are kept in memory for RunRetention.
//
// Protocol errors are JSON-RPC errors (-32700, -32600, -32601, -32602,
// -32603); execution errors are runs with status "failed" and
// error {type, message}.
package skillsprotocol
