// Package registry is the pure domain core of the skills worker: everything
// the upstream iii `skills` worker v0.2.2 decides without talking to
// anybody. It does no I/O and imports no transport; server/internal/worker binds it
// to an iii client and to state.
//
// The upstream strings are the contract. Every message, description and
// fixed text lives in messages.go; callers and tests match substrings of
// them, exactly as the upstream BDD suite does.
//
// # Validation
//
// [ValidateID] checks skill ids (1+ '/'-separated segments of [a-z0-9_-],
// at most [MaxSegmentLen] bytes each and [MaxIDLen] in total, first segment
// not "fn"); [ValidateName] checks prompt names; [ValidateArguments],
// [ValidateSkillBody], [ValidatePromptDescription] and [ValidatePromptFunctionID]
// cover the rest. [ValidateSkillRegistration] and [ValidatePromptRegistration]
// run a register call's checks in upstream order. Messages quote values
// the way Rust's {:?} does.
//
// # URIs
//
// [ParseURI] maps an iii:// URI to a [Target]: the index (iii://skills), a
// skill (iii://a/b/c) or a section (iii://fn/a/b → function a::b). [IsHidden]
// is the recursion guard over [AlwaysHiddenPrefixes]; [CheckSection] and
// [CheckPromptHandler] turn it into the upstream errors.
//
// # The iii://skills index
//
// [Summarize] extracts a body's title ([ExtractTitle]) and description
// ([ExtractDescription], cut by [TruncateChars] at [MaxDescriptionChars]) once,
// at register time. [IndexLine] renders one line from that summary, and
// [RenderIndex] concatenates sorted lines under [IndexHeader]. [Index] keeps the
// summaries of a live registry sorted and caches the rendered body, so a
// read of 10 000 skills is a string copy until the next change.
//
// # Outputs
//
// [NormalizeSectionOutput] turns a section function's output into text and a
// mime type (string or {content} → markdown, anything else → [PrettyJSON],
// the serde_json::to_string_pretty layout). [NormalizePromptOutput] turns a
// prompt handler's output into MCP messages. [SelectFetchURIs],
// [FormatFetchSection] and [JoinFetchSections] assemble skill::fetch
// responses; with acceptBare, bare skill paths are accepted the way the
// iii-directory worker does.
//
// # Payloads and refusals
//
// Each function's payload is decoded once, with serde's strictness and
// messages, by [DecodeRegisterSkillInput], [DecodeUnregisterSkillInput],
// [DecodeReadResourceInput], [DecodeFetchInput], [DecodeRegisterPromptInput],
// [DecodeUnregisterPromptInput], [DecodePromptGetInput] and
// [DecodeEmptyInput], through the same walker as the stored rows, so a
// wrongly typed value reads the same wherever it is met. Their errors, the
// validation errors and the URI errors are the caller's fault: the worker
// answers them with code [CodeInvalidArguments] and the unchanged message.
//
// # Data
//
// [StoredSkill] and [StoredPrompt] are the state rows ([DecodeStoredSkill] and
// [DecodeStoredPrompt] apply serde's strictness to them); [Timestamp] formats
// registered_at like chrono's to_rfc3339. The remaining types are the
// function outputs and the MCP-shaped envelopes ([NewResourcesList],
// [NewReadResult], [Templates], [NewMCPPromptList], [PromptGetResult]), with
// fields in alphabetical key order so they encode byte-for-byte like the
// upstream serde_json output.
//
// # Upstream facts
//
// A bare § in this package (comments and test names) is a section of
// docs/reference/skills-worker.md, the upstream behaviour it reproduces.
package registry
