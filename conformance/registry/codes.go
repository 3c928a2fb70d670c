package registry

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
)

// Error codes (ours; not upstream v0.2.2, which answers every failure
// with invocation_failed): our registry keeps upstream's message text and
// names each verdict by code, so callers decide by code. A registry that
// lists none of our extensions (skills::versions, skills::search) is taken
// for upstream and these specs are skipped.

// failsWith asserts that fn refuses payload with code and a message holding
// each of substrings. The iii error reads "<code>: <message> (function …)".
func failsWith(ctx context.Context, fn string, payload any, code string, substrings ...string) {
	GinkgoHelper()
	fails(ctx, fn, payload, append([]string{code + ": "}, substrings...)...)
}

var _ = group.Describe("error codes of verdicts (K)", Label("codes", "extra"), func() {
	var versions bool
	BeforeEach(func(ctx SpecContext) {
		ids, err := client.FunctionIDs(ctx)
		if err != nil {
			Fail(err.Error())
		}
		versions = slices.Contains(ids, "skills::versions")
		if !versions && !slices.Contains(ids, "skills::search") {
			Skip("the registry under test has none of our extensions: upstream v0.2.2 answers every failure with invocation_failed")
		}
	})

	It("K1 an unknown skill is NOT_FOUND with upstream's message", func(ctx SpecContext) {
		id := scoped("k1-missing")
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id}, "NOT_FOUND", "Skill not found: "+id)
		failsWith(ctx, "skill::fetch", map[string]any{"uris": []string{"iii://skills", "iii://" + id}}, "NOT_FOUND", "Skill not found: "+id)
	})

	It("K2 an unknown prompt is NOT_FOUND with upstream's message", func(ctx SpecContext) {
		name := scoped("k2-missing")
		failsWith(ctx, "prompts::mcp-get", map[string]any{"name": name}, "NOT_FOUND", "Prompt not found: "+name)
	})

	It("K3 a section URI without a function behind it is NOT_FOUND", func(ctx SpecContext) {
		fid := fnID("k3-missing")
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": sectionURI(fid)}, "NOT_FOUND",
			"trigger "+fid+": remote error (function_not_found)")
	})

	It("K4 an unknown version or label of a skill is NOT_FOUND", func(ctx SpecContext) {
		if !versions {
			Skip("the registry under test has no skills::versions")
		}
		id := scoped("k4")
		register(ctx, id, "# One\n", nil)
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@7"}, "NOT_FOUND", "has no version 7")
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@prod"}, "NOT_FOUND", `has no label "prod"`)
		failsWith(ctx, "skills::versions", map[string]string{"id": scoped("k4-never")}, "NOT_FOUND", "has no versions")
	})

	It("K5 input the rules refuse is INVALID_ARGUMENTS, a hidden section too", func(ctx SpecContext) {
		failsWith(ctx, "skills::register", map[string]string{"id": "Bad-Id", "skill": "x"}, "INVALID_ARGUMENTS", "lowercase")
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://fn/state/set"}, "INVALID_ARGUMENTS", "internal namespace")
		failsWith(ctx, "prompts::mcp-get", map[string]any{"name": "Bad Name"}, "INVALID_ARGUMENTS", "name may only contain")
	})
})
