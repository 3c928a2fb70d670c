package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

// indexEntry is the exact resources-list entry of iii://skills.
var indexEntry = map[string]any{"uri": "iii://skills", "name": "skills",
	"description": "Index of every registered skill", "mimeType": "text/markdown"}

var _ = group.Describe("skills resources (checklist C)", Label("skills_resources"), func() {
	It("C1 resources-list has the index and a seeded skill", func(ctx SpecContext) {
		id := scoped("listed")
		registerSkill(ctx, id, "# Listed\n\nA listed skill.")
		var out struct {
			Resources []map[string]any `json:"resources"`
		}
		callInto(ctx, "skills::resources-list", map[string]any{}, &out)
		var uris []any
		for _, r := range out.Resources {
			uris = append(uris, r["uri"])
		}
		Expect(uris).To(ContainElements("iii://skills", "iii://"+id))
	})

	It("C2 resources-templates has iii://{skill_id} and iii://fn/{function_path}", func(ctx SpecContext) {
		var out struct {
			ResourceTemplates []map[string]any `json:"resourceTemplates"`
		}
		callInto(ctx, "skills::resources-templates", map[string]any{}, &out)
		Expect(out.ResourceTemplates).To(HaveLen(2))
		Expect([]any{out.ResourceTemplates[0]["uriTemplate"], out.ResourceTemplates[1]["uriTemplate"]}).
			To(ConsistOf("iii://{skill_id}", "iii://fn/{function_path}"))
	})

	It("C2 resources-templates is exactly the v0.2.2 constant", Label("extra"), func(ctx SpecContext) {
		raw := call(ctx, "skills::resources-templates", map[string]any{})
		Expect(string(raw)).To(MatchJSON(`{"resourceTemplates":[
			{"uriTemplate":"iii://{skill_id}","name":"Skill","description":"Markdown body of a registered skill (1+ segments separated by '/')","mimeType":"text/markdown"},
			{"uriTemplate":"iii://fn/{function_path}","name":"Skill section","description":"Trigger the function at ` + "`function_path`" + ` (each '/' becomes '::') with empty input and serve its output. e.g. ` + "`iii://fn/scope/echo`" + ` triggers ` + "`scope::echo`" + `.","mimeType":"text/markdown"}]}`))
	})

	It("C3 the iii://skills index shows title and first paragraph", func(ctx SpecContext) {
		registerSkill(ctx, scoped("indexed"), "# Indexed skill\n\nFirst paragraph summary.\n\nIgnored second paragraph.")
		c := read(ctx, "iii://skills")
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("# Skills"))
		Expect(c.Text).To(ContainSubstring("Indexed skill"))
		Expect(c.Text).To(ContainSubstring("First paragraph summary."))
		Expect(c.Text).NotTo(ContainSubstring("Ignored second paragraph."))
	})

	It("C4 reads a skill body", func(ctx SpecContext) {
		id := scoped("body")
		registerSkill(ctx, id, "# Body\n\nThe full body goes here.")
		c := read(ctx, "iii://"+id)
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("The full body goes here."))
	})

	It("C5 a section function returning a string is markdown", func(ctx SpecContext) {
		fid := fnID("section-str")
		provide(ctx, fid, harness.Returning("# str-section\nplain text"))
		c := read(ctx, sectionURI(fid))
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("str-section"))
	})

	It("C6 a section function returning {content} is markdown", func(ctx SpecContext) {
		fid := fnID("section-obj")
		provide(ctx, fid, harness.Returning(map[string]any{"content": "# object-section\nwrapped"}))
		c := read(ctx, sectionURI(fid))
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(Equal("# object-section\nwrapped"))
	})

	It("C7 a section function returning another object is JSON", func(ctx SpecContext) {
		fid := fnID("section-json")
		provide(ctx, fid, harness.Returning(map[string]any{"count": 42, "label": "json"}))
		c := read(ctx, sectionURI(fid))
		Expect(c.MimeType).To(Equal("application/json"))
		Expect(c.Text).To(ContainSubstring("count"))
	})

	DescribeTable("C8–C11 section URIs into internal namespaces are refused",
		func(ctx SpecContext, uri, fid string) {
			fails(ctx, "skills::resources-read", map[string]string{"uri": uri}, "internal namespace",
				fmt.Sprintf("Function '%s' is in an internal namespace and cannot back a skill resource", fid))
		},
		Entry("C8 state", "iii://fn/state/set", "state::set"),
		Entry("C9 mcp", "iii://fn/mcp/handler", "mcp::handler"),
		Entry("C10 skills", "iii://fn/skills/register", "skills::register"),
		Entry("C11 prompts", "iii://fn/prompts/register", "prompts::register"),
	)

	It("C12 a non-iii URI is refused", func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "https://example.com"},
			"iii://", "Resource URI must start with iii://: https://example.com")
	})

	It("C13 iii://fn without a function path is refused", func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://fn"}, "missing a function path",
			"Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: iii://fn")
	})

	It("C14 iii://fn/ has an empty segment", func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://fn/"}, "empty segment",
			"Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://fn/")
	})

	It("C15 an unknown skill is not found", func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://no-such-skill-does-not-exist"},
			"not found", "Skill not found: no-such-skill-does-not-exist")
	})

	It("C16 an unknown nested skill is not found", func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://no-parent/no-child"},
			"not found", "Skill not found: no-parent/no-child")
	})

	It("v0.1.4's three-segment URI is now an ordinary (missing) skill", Label("extra"), func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://a/b/c"}, "Skill not found: a/b/c")
	})

	It("v0.1.4's legacy guard URI fails the id check, not the guard", Label("extra"), func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://anything/state::set"},
			`invalid id (segment 2 of "anything/state::set")`)
	})

	It("empty resource ids and doubled slashes are refused", Label("extra"), func(ctx SpecContext) {
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://"}, "Empty resource id: iii://")
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://a//b"}, "may not contain empty segments")
		fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://skills/"}, "may not contain empty segments")
	})
})

var _ = group.Describe("index and resources extras (checklist J7–J11)", Label("extra"), func() {
	It("J7 an empty registry renders the empty index", Label("J7"), func(ctx SpecContext) {
		Expect(read(ctx, "iii://skills").Text).To(Equal(IndexHeader + "_No skills are currently registered._\n"))
	})

	It("J7 index lines are exact: titles, descriptions, truncation, indentation, byte order", Label("J7"), func(ctx SpecContext) {
		long141 := strings.Repeat("é", 141)
		exact140 := strings.Repeat("x", 140)
		seeds := []struct{ id, body, line string }{}
		add := func(id, body, title, desc string) {
			line := strings.Repeat("  ", strings.Count(id, "/")) + "- [`" + id + "`](iii://" + id + ") — " + title
			if desc != "" {
				line += " — " + desc
			}
			seeds = append(seeds, struct{ id, body, line string }{id, body, line + "\n"})
		}
		add(scoped("idx-a"), "no heading here\n\nsecond paragraph", scoped("idx-a"), "no heading here")
		add(nested("idx-a", "child"), "# Child\n\n## sub\n\nunder a subheading", "Child", "under a subheading")
		add(scoped("idx-a")+"-x", "# Dash\n\nsorts before the slash", "Dash", "sorts before the slash")
		add(scoped("idx-b"), "# Only Title\n", "Only Title", "")
		add(scoped("idx-c"), "# Long\n\n"+long141+"\n", "Long", strings.Repeat("é", 140)+"...")
		add(scoped("idx-d"), "# Exact\n\n"+exact140, "Exact", exact140)
		add(scoped("idx-e"), "  #   Spaced Title  \nline one\n  line two  \nline three\n\nnext", "Spaced Title",
			"line one line two line three")
		add(nested("idx-f", "g", "h"), "## not a title\n#nope\n\ntext", nested("idx-f", "g", "h"), "text")
		for _, s := range seeds {
			registerSkill(ctx, s.id, s.body)
		}
		sort.Slice(seeds, func(i, j int) bool { return seeds[i].id < seeds[j].id })
		want := IndexHeader
		for _, s := range seeds {
			want += s.line
		}
		Expect(read(ctx, "iii://skills").Text).To(Equal(want))
	})

	It("J8 resources-list: index first, then one entry per skill sorted by id, without descriptions", Label("J8"), func(ctx SpecContext) {
		titled, plain, child := scoped("res-a"), scoped("res-b"), nested("res-a", "sub")
		registerSkill(ctx, plain, "plain body")
		registerSkill(ctx, child, "# Sub Title\n\nsub body")
		registerSkill(ctx, titled, "# Titled\n\nbody")
		entry := func(id, name string) map[string]any {
			return map[string]any{"uri": "iii://" + id, "name": name, "mimeType": "text/markdown"}
		}
		want := map[string]any{"resources": []any{indexEntry, entry(titled, "Titled"), entry(child, "Sub Title"), entry(plain, plain)}}
		wantJSON, _ := json.Marshal(want)
		Expect(string(call(ctx, "skills::resources-list", map[string]any{}))).To(MatchJSON(wantJSON))
	})

	It("J9 a skill registered as `skills` is shadowed by the index; skills/foo is reachable", Label("J9"), func(ctx SpecContext) {
		DeferCleanup(func() {
			_, _ = client.Call(bg, "skills::unregister", map[string]string{"id": "skills"})
			_, _ = client.Call(bg, "skills::unregister", map[string]string{"id": "skills/foo"})
		})
		registerSkill(ctx, "skills", "# Shadowed\n\nnever readable")
		registerSkill(ctx, "skills/foo", "# Foo\n\nfoo body")
		c := read(ctx, "iii://skills")
		Expect(c.Text).To(HavePrefix(IndexHeader))
		Expect(c.Text).NotTo(Equal("# Shadowed\n\nnever readable"))
		Expect(read(ctx, "iii://skills/foo").Text).To(Equal("# Foo\n\nfoo body"))
		var out struct {
			Resources []map[string]any `json:"resources"`
		}
		callInto(ctx, "skills::resources-list", map[string]any{}, &out)
		n := 0
		for _, r := range out.Resources {
			if r["uri"] == "iii://skills" {
				n++
			}
		}
		Expect(n).To(Equal(2), "resources-list: %v", out.Resources)
		Expect(out.Resources[0]).To(Equal(indexEntry))
	})

	DescribeTable("J10 malformed section URIs are refused", Label("J10"),
		func(ctx SpecContext, uri, want string) {
			fails(ctx, "skills::resources-read", map[string]string{"uri": uri}, want)
		},
		Entry("uppercase", "iii://fn/Bad-Case", `invalid section URI segment "Bad-Case"`),
		Entry("colons", "iii://fn/a/b::c", `invalid section URI segment "b::c"`),
		Entry("space", "iii://fn/a b", `invalid section URI segment "a b"`),
	)

	DescribeTable("J10 every hard-floor namespace reachable by a section URI is blocked", Label("J10"),
		func(ctx SpecContext, uri, fid string) {
			fails(ctx, "skills::resources-read", map[string]string{"uri": uri},
				fmt.Sprintf("Function '%s' is in an internal namespace and cannot back a skill resource", fid))
		},
		Entry("iii::", "iii://fn/iii/x", "iii::x"),
		Entry("stream::", "iii://fn/stream/x", "stream::x"),
		Entry("engine::", "iii://fn/engine/x", "engine::x"),
		Entry("a2a::", "iii://fn/a2a/x", "a2a::x"),
	)

	It("J10 a bare `state` is not blocked: it is an unknown function", Label("J10"), func(ctx SpecContext) {
		msg := fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://fn/state"}, "trigger state")
		Expect(msg).NotTo(ContainSubstring("internal namespace"))
	})

	It("J10 the skill::fetch alias is not blocked; called with {} it asks for a uri", Label("J10"), func(ctx SpecContext) {
		msg := fails(ctx, "skills::resources-read", map[string]string{"uri": "iii://fn/skill/fetch"}, "Provide uri")
		Expect(msg).NotTo(ContainSubstring("internal namespace"))
	})

	It("J10 an unknown section function fails the trigger", Label("J10"), func(ctx SpecContext) {
		fid := fnID("missing")
		fails(ctx, "skills::resources-read", map[string]string{"uri": sectionURI(fid)}, "trigger "+fid)
	})

	It("J10 a section function that throws reports the trigger error", Label("J10"), func(ctx SpecContext) {
		fid := fnID("throws")
		provide(ctx, fid, func(context.Context, json.RawMessage) (any, error) {
			return nil, fmt.Errorf("section exploded")
		})
		fails(ctx, "skills::resources-read", map[string]string{"uri": sectionURI(fid)}, "trigger "+fid, "section exploded")
	})

	DescribeTable("J11 section outputs other than a string or {content: string} are pretty JSON", Label("J11"),
		func(ctx SpecContext, label string, output json.RawMessage, want string) {
			fid := fnID("out-" + label)
			provide(ctx, fid, harness.Returning(output))
			c := read(ctx, sectionURI(fid))
			Expect(c.MimeType).To(Equal("application/json"))
			Expect(c.Text).To(Equal(want))
		},
		Entry("content not a string", "num-content", json.RawMessage(`{"content":5}`), "{\n  \"content\": 5\n}"),
		Entry("array", "array", json.RawMessage(`[1,"a",{"b":true}]`), "[\n  1,\n  \"a\",\n  {\n    \"b\": true\n  }\n]"),
		Entry("number", "number", json.RawMessage(`42`), "42"),
		Entry("null", "null", json.RawMessage(`null`), "null"),
		Entry("sorted keys, no HTML escaping, number text kept", "sorted", json.RawMessage(`{"b":"<x> & y","a":1.5,"c":"é"}`),
			"{\n  \"a\": 1.5,\n  \"b\": \"<x> & y\",\n  \"c\": \"é\"\n}"),
	)

	It("J11 a string section output is served verbatim", Label("J11"), func(ctx SpecContext) {
		fid := fnID("verbatim")
		provide(ctx, fid, harness.Returning("  # verbatim\n\ntrailing space  \n\n"))
		c := read(ctx, sectionURI(fid))
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(Equal("  # verbatim\n\ntrailing space  \n\n"))
	})
})
