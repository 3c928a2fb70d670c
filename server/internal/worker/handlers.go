package worker

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// The registry's functions: each decodes its arguments once (upstream's
// 13 with package registry's decoders and upstream's messages, ours with
// core's), calls the registry and returns its answer for the client to
// encode. Refusals go out with the registry's codes.

// refused answers input the caller got wrong with INVALID_ARGUMENTS and the
// decoder's message.
func refused(err error) error {
	var inv *iii.InvocationError
	if errors.As(err, &inv) {
		return inv
	}
	return &iii.InvocationError{Code: registry.CodeInvalidArguments, Message: err.Error()}
}

func (w *Worker) upstreamHandlers() map[string]iii.Handler {
	r := w.reg
	fetch := func(ctx context.Context, data json.RawMessage) (any, error) {
		in, err := registry.DecodeFetchInput(data)
		if err != nil {
			return nil, refused(err)
		}
		return r.Fetch(ctx, in)
	}
	return map[string]iii.Handler{
		rules.FnSkillsRegister: func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := registry.DecodeRegisterSkillInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.RegisterSkill(ctx, w.callerOf(ctx, data), in)
		},
		rules.FnSkillsUnregister: func(ctx context.Context, data json.RawMessage) (any, error) {
			id, err := registry.DecodeUnregisterSkillInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.UnregisterSkill(ctx, w.callerOf(ctx, data), id)
		},
		rules.FnSkillsList: func(ctx context.Context, data json.RawMessage) (any, error) {
			if err := registry.DecodeEmptyInput(data, "ListSkillsInput"); err != nil {
				return nil, refused(err)
			}
			return r.ListSkills(ctx)
		},
		rules.FnSkillsResourcesList: func(ctx context.Context, data json.RawMessage) (any, error) {
			if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
				return nil, refused(err)
			}
			return r.Resources(ctx)
		},
		rules.FnSkillsResourcesRead: func(ctx context.Context, data json.RawMessage) (any, error) {
			uri, err := registry.DecodeReadResourceInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.Read(ctx, uri)
		},
		rules.FnSkillsResourcesTemplates: func(ctx context.Context, data json.RawMessage) (any, error) {
			if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
				return nil, refused(err)
			}
			return r.Templates(ctx)
		},
		rules.FnSkillsFetchSkill: fetch,
		rules.FnSkillFetch:       fetch,
		rules.FnPromptsRegister: func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := registry.DecodeRegisterPromptInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.RegisterPrompt(ctx, w.callerOf(ctx, data), in)
		},
		rules.FnPromptsUnregister: func(ctx context.Context, data json.RawMessage) (any, error) {
			name, err := registry.DecodeUnregisterPromptInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.UnregisterPrompt(ctx, w.callerOf(ctx, data), name)
		},
		rules.FnPromptsList: func(ctx context.Context, data json.RawMessage) (any, error) {
			if err := registry.DecodeEmptyInput(data, "ListPromptsInput"); err != nil {
				return nil, refused(err)
			}
			return r.ListPrompts(ctx)
		},
		rules.FnPromptsMCPList: func(ctx context.Context, data json.RawMessage) (any, error) {
			if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
				return nil, refused(err)
			}
			return r.MCPPrompts(ctx)
		},
		rules.FnPromptsMCPGet: func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := registry.DecodePromptGetInput(data)
			if err != nil {
				return nil, refused(err)
			}
			return r.GetPrompt(ctx, in)
		},
	}
}

const searchDescription = "Search the skill catalog (published, skills folders, bundles) by what you want to do, " +
	"in your own words: returns the best-matching skills ranked by relevance ({id, title, description, origin, uri, score}), " +
	"and low_confidence: true when nothing matches the query well. Then read a result with " + rules.FnSkillFetch + " {\"uri\": uri}. " +
	"Prefer this to reading the whole iii://skills index when the catalog is large."

var searchRequestFormat = json.RawMessage(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "SearchSkillsInput",
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What you want to do, in a few words (\"shrink images for the web\")."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "Most results returned."},
    "namespace": {"type": "string", "description": "Only skills with this id or under it (\"iii\" keeps iii and iii/…)."}
  },
  "required": ["query"]
}`)

var searchResponseFormat = json.RawMessage(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "SearchSkillsOutput",
  "type": "object",
  "properties": {
    "query": {"type": "string"},
    "results": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "origin": {"type": "string", "enum": ["published", "folder", "bundle"]},
        "uri": {"type": "string"},
        "score": {"type": "number"},
        "sha256": {"type": "string", "description": "Digest of what the skill serves: pin it with iii://<id>@sha256:<sha256>."},
        "deprecated": {"type": "string", "description": "The message of a deprecated skill."}
      },
      "required": ["id", "title", "description", "origin", "uri", "score"]
    }},
    "low_confidence": {"type": "boolean"}
  },
  "required": ["query", "results", "low_confidence"]
}`)

// searchFunctions are skills::search and its public alias skill::search.
func (w *Worker) searchFunctions() []function {
	var fns []function
	for _, id := range []string{rules.FnSkillsSearch, rules.FnSkillSearch} {
		fns = append(fns, function{id: id, opts: iii.RegisterFunctionOptions{Description: searchDescription,
			RequestFormat: searchRequestFormat, ResponseFormat: searchResponseFormat},
			handler: func(ctx context.Context, data json.RawMessage) (any, error) {
				in, err := core.DecodeSearchInput(id, data)
				if err != nil {
					return nil, err
				}
				return w.reg.Search(ctx, in)
			}})
	}
	return fns
}

// versionKinds describe the versions functions of skills and prompts.
var versionKinds = []struct {
	kind                                        core.Kind
	fnVersions, fnLabel, fnRollback, fnDiff     string
	docVersions, docLabel, docRollback, docDiff string
	fnYank, fnUnyank, fnDeprecate               string
	docYank, docUnyank, docDeprecate            string
}{
	{core.KindSkill, rules.FnSkillsVersions, rules.FnSkillsLabel, rules.FnSkillsRollback, rules.FnSkillsDiff,
		"List a skill's kept versions, newest first, with their labels, sha256, signer (signed_by, key, signature), yanks, and the label map.",
		"Point a label (production, staging, …; not latest) at a version of a skill. Protected labels need admin_token.",
		"Register a version's body again as the skill's newest version (history is never rewritten).",
		"Unified diff between two versions of a skill.",
		rules.FnSkillsYank, rules.FnSkillsUnyank, rules.FnSkillsDeprecate,
		"Take a version of a skill out of service with a reason: latest, labels and unselected reads fall back to the newest version not yanked; pinned reads still work and carry the reason.",
		"Put a yanked version of a skill back in service.",
		"Mark a whole skill deprecated with a message (it stays served; listings carry the message); message null undeprecates."},
	{core.KindPrompt, rules.FnPromptsVersions, rules.FnPromptsLabel, rules.FnPromptsRollback, rules.FnPromptsDiff,
		"List a prompt's kept versions, newest first, with their labels, sha256, signer, yanks, and the label map.",
		"Point a label (not latest) at a version of a prompt. Protected labels need admin_token.",
		"Register a version's definition again as the prompt's newest version.",
		"Unified diff between two versions of a prompt's definition (JSON).",
		rules.FnPromptsYank, rules.FnPromptsUnyank, rules.FnPromptsDeprecate,
		"Take a version of a prompt out of service with a reason (a prompt's get and listings fall back to the newest version not yanked).",
		"Put a yanked version of a prompt back in service.",
		"Mark a whole prompt deprecated with a message; message null undeprecates."},
}

// versionFunctions are the versions, label, rollback and diff functions of
// skills and prompts (docs/versions.md).
func (w *Worker) versionFunctions() []function {
	sel := `{"oneOf":[{"type":"integer","minimum":1},{"type":"string"}],"description":"a version number, a label (latest, production, …) or sha256:<64 lowercase hex>"}`
	meta := `"message":{"type":"string","maxLength":4096},"author":{"type":"string","maxLength":256}`
	var fns []function
	for _, v := range versionKinds {
		k := v.kind
		field := `"id"`
		if k == core.KindPrompt {
			field = `"name"`
		}
		id := field + `:{"type":"string"}`
		fn := func(fid, doc, request string, h iii.Handler) function {
			return function{id: fid, handler: h, opts: iii.RegisterFunctionOptions{Description: doc, RequestFormat: json.RawMessage(request)}}
		}
		fns = append(fns,
			fn(v.fnVersions, v.docVersions, `{"type":"object","required":[`+field+`],"properties":{`+id+`}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					target, err := core.DecodeVersionsInput(v.fnVersions, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Versions(ctx, k, target)
				}),
			fn(v.fnLabel, v.docLabel, `{"type":"object","required":[`+field+`,"label","version"],"properties":{`+id+`,"label":{"type":"string"},"version":`+sel+`,"admin_token":{"type":"string"}}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeLabelInput(v.fnLabel, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Label(ctx, w.callerOf(ctx, data), k, in)
				}),
			fn(v.fnRollback, v.docRollback, `{"type":"object","required":[`+field+`,"version"],"properties":{`+id+`,"version":`+sel+`,`+meta+`}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeRollbackInput(v.fnRollback, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Rollback(ctx, w.callerOf(ctx, data), k, in)
				}),
			fn(v.fnDiff, v.docDiff, `{"type":"object","required":[`+field+`,"from","to"],"properties":{`+id+`,"from":`+sel+`,"to":`+sel+`}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeDiffInput(v.fnDiff, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Diff(ctx, k, in)
				}),
			fn(v.fnYank, v.docYank, `{"type":"object","required":[`+field+`,"version","reason"],"properties":{`+id+`,"version":`+sel+`,"reason":{"type":"string","minLength":1,"maxLength":1024},"admin_token":{"type":"string"}}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeYankInput(v.fnYank, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Yank(ctx, w.callerOf(ctx, data), k, in)
				}),
			fn(v.fnUnyank, v.docUnyank, `{"type":"object","required":[`+field+`,"version"],"properties":{`+id+`,"version":`+sel+`,"admin_token":{"type":"string"}}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeUnyankInput(v.fnUnyank, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Unyank(ctx, w.callerOf(ctx, data), k, in)
				}),
			fn(v.fnDeprecate, v.docDeprecate, `{"type":"object","required":[`+field+`,"message"],"properties":{`+id+`,"message":{"type":["string","null"],"maxLength":4096}}}`,
				func(ctx context.Context, data json.RawMessage) (any, error) {
					in, err := core.DecodeDeprecateInput(v.fnDeprecate, k, data)
					if err != nil {
						return nil, err
					}
					return w.reg.Deprecate(ctx, w.callerOf(ctx, data), k, in)
				}))
	}
	return fns
}

// catalogFunctions publish the catalog as the MCP Skills extension serves
// it, for a surface in another process (core.Remote, `skills mcp`).
// Answers stay well under the engine's frame limit: a listing stops at
// about core.CatalogListBudget of skills (more: true), a file comes
// core.CatalogChunkBytes at a time; a chunk request naming the sha256 of
// the first chunk is refused once the file has another version, so a
// reader never joins chunks of two versions. They live under skills::, a
// hidden namespace, and are internal: never MCP tools.
func (w *Worker) catalogFunctions() []function {
	internal := func(doc string) iii.RegisterFunctionOptions {
		return iii.RegisterFunctionOptions{Description: doc, Metadata: iii.InternalMetadata}
	}
	return []function{
		{rules.FnCatalogList, func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := core.DecodeCatalogListInput(rules.FnCatalogList, data)
			if err != nil {
				return nil, err
			}
			skills, more, err := w.reg.CatalogSkills(ctx, in.After, in.Limit)
			if err != nil {
				return nil, err
			}
			budget := core.CatalogListBudget
			if in.MaxBytes > 0 {
				budget = min(budget, in.MaxBytes)
			}
			size := 0
			for i, sk := range skills {
				b, _ := json.Marshal(sk)
				if size += len(b); size > budget && i > 0 {
					return core.CatalogListOutput{Skills: skills[:i], More: true}, nil
				}
			}
			return core.CatalogListOutput{Skills: skills, More: more}, nil
		}, internal("Internal: skills of the catalog as the MCP Skills extension serves them, in path order ({after?, limit?, max_bytes?} → {skills, more}).")},
		{rules.FnCatalogGet, func(ctx context.Context, data json.RawMessage) (any, error) {
			path, err := core.DecodeCatalogGetInput(rules.FnCatalogGet, data)
			if err != nil {
				return nil, err
			}
			s, ok, err := w.reg.CatalogSkill(ctx, path)
			if err != nil || !ok {
				return core.CatalogGetOutput{}, err
			}
			return core.CatalogGetOutput{Skill: &s}, nil
		}, internal("Internal: one skill of the catalog as the MCP Skills extension serves it ({path} → {skill | null}).")},
		{rules.FnCatalogFile, func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := core.DecodeCatalogFileInput(rules.FnCatalogFile, data)
			if err != nil {
				return nil, err
			}
			b, sum, err := w.reg.CatalogFileVersion(in.Path, in.File)
			if errors.Is(err, skillsext.ErrNoSuchFile) {
				return nil, &iii.InvocationError{Code: rules.CodeNotFound, Message: "no such skill file"}
			}
			if err != nil {
				return nil, err
			}
			version := hex.EncodeToString(sum[:])
			if in.SHA256 != "" && in.SHA256 != version {
				return nil, &iii.InvocationError{Code: core.CodeFileChanged,
					Message: fmt.Sprintf("the file changed since its first chunk was read (sha256 %s, now %s)", in.SHA256, version)}
			}
			if in.Offset > int64(len(b)) {
				return nil, &iii.InvocationError{Code: rules.CodeInvalidArguments,
					Message: fmt.Sprintf("%s: offset %d is outside the file (%d bytes)", rules.FnCatalogFile, in.Offset, len(b))}
			}
			n := int64(core.CatalogChunkBytes)
			if in.MaxBytes > 0 {
				n = min(n, int64(in.MaxBytes))
			}
			chunk := b[in.Offset:min(int64(len(b)), in.Offset+n)]
			w.reg.CountCatalogRead(ctx, in.Path, in.File, in.Offset)
			return core.CatalogFileOutput{Data: base64.StdEncoding.EncodeToString(chunk), Size: int64(len(b)), SHA256: version}, nil
		}, internal("Internal: the bytes of one file of a catalog skill, 4 MiB at a time ({path, file, offset?, sha256?, max_bytes?} → {data: base64, size, sha256}; a chunk of a version the file no longer has is refused).")},
	}
}
