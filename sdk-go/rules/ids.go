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

	// Ours: trust in content (docs/trust.md): yank a version out of
	// service and back, deprecate a whole skill or prompt.
	FnSkillsYank       = "skills::yank"
	FnSkillsUnyank     = "skills::unyank"
	FnSkillsDeprecate  = "skills::deprecate"
	FnPromptsYank      = "prompts::yank"
	FnPromptsUnyank    = "prompts::unyank"
	FnPromptsDeprecate = "prompts::deprecate"

	// Ours: search, with skill::search beside it in the public skill::
	// namespace (as skill::fetch is beside skills::fetch_skill).
	FnSkillsSearch = "skills::search"
	FnSkillSearch  = "skill::search"

	// Ours: reads per skill and version (usage counts), and the ordered
	// feed of skill changes with a cursor, for clients that poll. The
	// function skills::changes and the pubsub topic TopicChanges share a
	// name but not a namespace: iii keeps function ids and topics apart.
	FnSkillsUsage   = "skills::usage"
	FnSkillsChanges = "skills::changes"

	// Ours, internal (metadata internal: true, never MCP tools): the
	// catalog as the MCP Skills extension serves it, for a surface in
	// another process (`skills mcp`), and its change trigger type.
	FnCatalogList          = "skills::catalog-list"
	FnCatalogGet           = "skills::catalog-get"
	FnCatalogFile          = "skills::catalog-file"
	TriggerCatalogOnChange = "skills::catalog-on-change"

	// Ours, internal: the registry's own subscriptions. FnCacheSync takes
	// the engine's state events of the skills scope; FnClusterSync the
	// changes other registry instances publish on TopicChanges.
	FnCacheSync   = "skills::cache-sync"
	FnClusterSync = "skills::cluster-sync"
	TopicChanges  = "skills::changes"
	// FnFunctionsSync takes the engine's engine::functions-available
	// events: which prompt handlers and section functions the registry
	// can reach (server/internal/reach).
	FnFunctionsSync = "skills::functions-sync"

	// Ours, internal: answers the caller the engine stamped on the call,
	// so that the registry learns at start whether its engine stamps it.
	FnCallerProbe = "skills::caller-probe"

	// Ours: Skills Protocol bundles published over iii and withdrawn
	// (docs/skills-protocol.md).
	FnPublishBundle   = "skills::publish-bundle"
	FnUnpublishBundle = "skills::unpublish-bundle"
)
