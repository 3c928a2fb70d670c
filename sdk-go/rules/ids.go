package rules

// Function ids and trigger type ids of the skills registry, written once
// here for the registry (server/internal/registry, server/internal/worker) and the Go
// publisher (sdk-go/skills). Their descriptions are served from the
// worker's api.json.
const (
	// Upstream v0.2.2 (docs/reference/skills-worker.md §1.1–§1.14).
	FnSkillsRegister           = "skills::register"
	FnSkillsUnregister         = "skills::unregister"
	FnSkillsList               = "skills::list"
	FnSkillsResourcesList      = "skills::resources-list"
	FnSkillsResourcesRead      = "skills::resources-read"
	FnSkillsResourcesTemplates = "skills::resources-templates"
	FnSkillsFetchSkill         = "skills::fetch_skill"
	FnSkillFetch               = "skill::fetch"
	FnPromptsRegister          = "prompts::register"
	FnPromptsUnregister        = "prompts::unregister"
	FnPromptsList              = "prompts::list"
	FnPromptsMCPList           = "prompts::mcp-list"
	FnPromptsMCPGet            = "prompts::mcp-get"

	TriggerSkillsOnChange  = "skills::on-change"
	TriggerPromptsOnChange = "prompts::on-change"

	// Ours: versions, labels and rollback (docs/versions.md).
	FnSkillsVersions  = "skills::versions"
	FnSkillsLabel     = "skills::label"
	FnSkillsRollback  = "skills::rollback"
	FnSkillsDiff      = "skills::diff"
	FnPromptsVersions = "prompts::versions"
	FnPromptsLabel    = "prompts::label"
	FnPromptsRollback = "prompts::rollback"
	FnPromptsDiff     = "prompts::diff"

	// Ours: search, with skill::search beside it in the public skill::
	// namespace (as skill::fetch is beside skills::fetch_skill).
	FnSkillsSearch = "skills::search"
	FnSkillSearch  = "skill::search"
)
