package directory

// Function and trigger-type ids of the iii-directory v0.5 surface, plus
// our diagnostics function. They are written here, in the package that
// serves them, and not in sdk-go/rules/ids.go with the registry's:
// iii-directory is an upstream worker of its own, whose surface this
// package alone provides; other packages name them through it.
const (
	FnSkillsList           = "directory::skills::list"
	FnSkillsFetch          = "directory::skills::fetch-skill"
	FnSkillsDownload       = "directory::skills::download"
	FnPromptsList          = "directory::prompts::list"
	FnPromptsGet           = "directory::prompts::get"
	FnFunctionsList        = "directory::engine::functions::list"
	FnFunctionsInfo        = "directory::engine::functions::info"
	FnTriggersList         = "directory::engine::triggers::list"
	FnTriggersInfo         = "directory::engine::triggers::info"
	FnRegisteredList       = "directory::engine::registered-triggers::list"
	FnRegisteredInfo       = "directory::engine::registered-triggers::info"
	FnWorkersList          = "directory::engine::workers::list"
	FnWorkersInfo          = "directory::engine::workers::info"
	FnRegistryWorkersList  = "directory::registry::workers::list"
	FnRegistryWorkersInfo  = "directory::registry::workers::info"
	FnSkillsDiagnostics    = "directory::skills::diagnostics"
	TriggerSkillsOnChange  = "directory::skills::on-change"
	TriggerPromptsOnChange = "directory::prompts::on-change"
)
