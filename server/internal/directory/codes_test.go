package directory

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// Every verdict carries its code (NOT_FOUND for what the surface does not
// hold, INVALID_ARGUMENTS for bad input) and upstream's message unchanged;
// a failure behind the surface stays invocation_failed.
func TestVerdictCodes(t *testing.T) {
	registry := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(registry.Close)
	cfg := DefaultConfig()
	cfg.RegistryURL = registry.URL
	cfg.RegistryCacheTTL = 0
	cfg.DownloadHosts = []string{hostOf(t, registry.URL)}
	s := startStack(t, []string{agentFolder(t)}, cfg, Options{})
	for _, c := range []struct {
		fn      string
		payload any
		code    string
		message string // the whole message: upstream's, byte for byte
	}{
		{FnSkillsFetch, map[string]any{"uri": "no-such-skill"}, rules.CodeNotFound, "Skill not found: no-such-skill"},
		{FnSkillsFetch, map[string]any{"uri": "iii://fn/conf/no-such-function"}, rules.CodeNotFound,
			"trigger conf::no-such-function: remote error (function_not_found): Function conf::no-such-function not found"},
		{FnSkillsFetch, map[string]any{}, rules.CodeInvalidArguments, "Provide uri or a non-empty uris array"},
		{FnSkillsFetch, map[string]any{"uri": "https://example.com/x"}, rules.CodeInvalidArguments, "Invalid URI (must start with iii://): https://example.com/x"},
		{FnSkillsList, nil, "", ""}, // answered: no verdict
		{FnPromptsGet, map[string]any{"name": "nope"}, rules.CodeNotFound, "Prompt not found: nope"},
		{FnPromptsGet, map[string]any{"name": ""}, rules.CodeInvalidArguments, "name must be non-empty"},
		{FnPromptsGet, map[string]any{}, rules.CodeInvalidArguments, "missing field `name`"},
		{FnFunctionsInfo, map[string]any{"function_id": " "}, rules.CodeInvalidArguments, "function_id must be non-empty"},
		{FnFunctionsInfo, map[string]any{"function_id": "no::such"}, rules.CodeNotFound, "function not found: no::such"},
		{FnTriggersInfo, map[string]any{"id": ""}, rules.CodeInvalidArguments, "id must be non-empty"},
		{FnTriggersInfo, map[string]any{"id": "no::such"}, rules.CodeNotFound, "trigger type not found: no::such"},
		{FnRegisteredInfo, map[string]any{"id": ""}, rules.CodeInvalidArguments, "id must be non-empty"},
		{FnRegisteredInfo, map[string]any{"id": "ghost"}, rules.CodeNotFound, "registered trigger not found: ghost"},
		{FnWorkersInfo, map[string]any{"name": ""}, rules.CodeInvalidArguments, "name must be non-empty"},
		{FnWorkersInfo, map[string]any{"name": "ghost"}, rules.CodeNotFound, "worker not found: ghost"},
		{FnFunctionsList, []int{}, rules.CodeInvalidArguments, "invalid type: sequence, expected struct FunctionsListInput"},
		{FnRegistryWorkersList, map[string]any{"search": " "}, rules.CodeInvalidArguments, "search must be non-empty"},
		{FnRegistryWorkersInfo, map[string]any{"name": "x", "version": "1", "tag": "t"}, rules.CodeInvalidArguments, "specify either version OR tag, not both"},
		{FnRegistryWorkersInfo, map[string]any{"name": "ghost"}, rules.CodeNotFound,
			"registry GET " + registry.URL + "/w/ghost?tag=latest returned HTTP 404: 404 page not found\n"},
		{FnSkillsDownload, map[string]any{"repo": "https://x", "worker": "w"}, rules.CodeInvalidArguments,
			"specify either {repo, skill, branch?} OR {worker, version?|tag?}, not both"},
		{FnSkillsDownload, map[string]any{"repo": "http://x", "skill": "a"}, rules.CodeInvalidArguments,
			`repo must start with https://, ssh:// or git@: "http://x"`},
	} {
		_, err := s.call(c.fn, c.payload)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s(%v): %v", c.fn, c.payload, err)
			}
			continue
		}
		if code, message := verdict(err); code != c.code || message != c.message {
			t.Errorf("%s(%v) = %v; want code %s and message %q", c.fn, c.payload, err, c.code, c.message)
		}
	}
}

// verdict is the code and message of an invocation error ("" for
// another error).
func verdict(err error) (code, message string) {
	var ie *iii.InvocationError
	if !errors.As(err, &ie) {
		return "", ""
	}
	return ie.Code, ie.Message
}

// A field of the wrong type is refused in serde's words, as the registry's
// upstream functions refuse theirs.
func TestDirectoryFieldTypesInSerdeWords(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    string
	}{
		{`{"name": 5}`, "invalid type: integer `5`, expected a string"},
		{`{"name": ["p"]}`, "invalid type: sequence, expected a string"},
	} {
		err := decode(json.RawMessage(c.payload), "GetPromptInput", &struct {
			Name *string `json:"name"`
		}{})
		var ie *iii.InvocationError
		if !errors.As(err, &ie) || ie.Code != rules.CodeInvalidArguments || ie.Message != c.want {
			t.Errorf("%s: %v, want INVALID_ARGUMENTS %q", c.payload, err, c.want)
		}
	}
}
