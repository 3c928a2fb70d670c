package registry_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("stored row decoding", Label("pure"), func() {
	It("decodes a skill row, ignoring unknown keys", func() {
		s, err := registry.DecodeStoredSkill(json.RawMessage(`{"extra":1,"skill":"body","id":"a/b","registered_at":"t"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(s).To(Equal(registry.StoredSkill{ID: "a/b", Skill: "body", RegisteredAt: "t"}))
	})

	It("round-trips what it encodes", func() {
		in := registry.StoredSkill{ID: "x", Skill: "é\n<&>", RegisteredAt: "t"}
		out, err := registry.DecodeStoredSkill(json.RawMessage(encode(in)))
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(in))
	})

	DescribeTable("rejects malformed skill rows like serde",
		func(raw, want string) {
			_, err := registry.DecodeStoredSkill(json.RawMessage(raw))
			Expect(err).To(MatchError(want))
		},
		Entry("missing skill", `{"id":"x","registered_at":"t"}`, "missing field `skill`"),
		Entry("missing fields report in declaration order", `{}`, "missing field `id`"),
		Entry("wrong type", `{"id":5,"skill":"b","registered_at":"t"}`, "invalid type: integer `5`, expected a string"),
		Entry("float", `{"id":1.5}`, "invalid type: floating point `1.5`, expected a string"),
		Entry("null field", `{"id":null}`, "invalid type: null, expected a string"),
		Entry("bool field", `{"id":true}`, "invalid type: boolean `true`, expected a string"),
		Entry("object field", `{"skill":{}}`, "invalid type: map, expected a string"),
		Entry("duplicate", `{"id":"a","id":"b","skill":"s","registered_at":"t"}`, "duplicate field `id`"),
		Entry("null row", `null`, "invalid type: null, expected struct StoredSkill"),
		Entry("string row", `"x"`, `invalid type: string "x", expected struct StoredSkill`),
		Entry("array row", `[]`, "invalid type: sequence, expected struct StoredSkill"),
	)

	It("decodes prompt rows with optional arguments", func() {
		p, err := registry.DecodeStoredPrompt(json.RawMessage(`{"name":"p","description":"d","function_id":"w::f","registered_at":"t",` +
			`"arguments":[{"name":"to","description":"Recipient","required":true},{"name":"cc","description":null},{"name":"bcc"}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(Equal(registry.StoredPrompt{
			Name: "p", Description: "d", FunctionID: "w::f", RegisteredAt: "t",
			Arguments: []registry.PromptArgument{
				{Name: "to", Description: ptr("Recipient"), Required: true},
				{Name: "cc"},
				{Name: "bcc"},
			},
		}))
		p, err = registry.DecodeStoredPrompt(json.RawMessage(`{"name":"p","description":"d","function_id":"f","registered_at":"t"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Arguments).To(Equal([]registry.PromptArgument{}))
	})

	DescribeTable("rejects malformed prompt rows",
		func(raw, want string) {
			_, err := registry.DecodeStoredPrompt(json.RawMessage(raw))
			Expect(err).To(MatchError(want))
		},
		Entry("missing function_id", `{"name":"p","description":"d","registered_at":"t"}`, "missing field `function_id`"),
		Entry("null arguments", `{"arguments":null}`, "invalid type: null, expected a sequence"),
		Entry("argument without name", `{"name":"p","description":"d","function_id":"f","registered_at":"t","arguments":[{}]}`, "missing field `name`"),
		Entry("required not a bool", `{"name":"p","description":"d","function_id":"f","registered_at":"t","arguments":[{"name":"a","required":null}]}`,
			"invalid type: null, expected a boolean"),
		Entry("argument not an object", `{"arguments":[5]}`, "invalid type: integer `5`, expected struct PromptArgument"),
	)
})
