// Package directory is the iii-directory v0.5 surface (seed 001) bound to
// an iii client and the skills folders of server/internal/fsource: 15 functions
// and 2 trigger types with upstream's ids, descriptions, shapes and
// messages (messages.go), plus directory::skills::diagnostics.
//
//	directory::skills::list          folder skills: {id, bytes (file size), modified_at}
//	directory::skills::fetch-skill   iii:// URIs or bare paths; iii://directory/skills is the
//	                                 untruncated index; iii://fn/… calls any function
//	directory::skills::download      {repo, skill, branch?} (git, https/ssh only) or
//	                                 {worker, version?|tag?} (registry) into the first folder
//	directory::prompts::list / get   */prompts/*.md
//	directory::engine::*             functions, trigger types, registered triggers, workers;
//	                                 functions::info adds how_guide and related_skills
//	directory::registry::workers::*  the public registry, cached for registry_cache_ttl_ms
//	directory::skills::diagnostics   folders, skipped files and reasons, shadowed ids
//
// directory::skills::on-change and directory::prompts::on-change fire
// upstream's {op:"download", namespace, source} after a download, and
// {id|name, op:"put"|"remove", path, source:"watch"} for every change the
// folder watcher sees, from one goroutine in order.
//
// The skills served here are the folders' own (the first folder holding
// an id wins); skills a worker publishes are not part of this surface.
// The registry functions (server/internal/worker) serve both, through the catalog.
package directory
