package registry_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("NormalizeSectionOutput (J11, C5-C7)", Label("pure"), func() {
	DescribeTable("serves strings and {content: string} as markdown",
		func(raw, want string) {
			text, mime := registry.NormalizeSectionOutput(json.RawMessage(raw))
			Expect(mime).To(Equal("text/markdown"))
			Expect(text).To(Equal(want))
		},
		Entry("string", `"# str-section\nplain text"`, "# str-section\nplain text"),
		Entry("empty string", `""`, ""),
		Entry("content string", `{"content":"# object-section\nwrapped"}`, "# object-section\nwrapped"),
		Entry("content with other keys", `{"other":1,"content":"x"}`, "x"),
		Entry("duplicate content key: last wins", `{"content":5,"content":"late"}`, "late"),
		Entry("surrounding whitespace", " \n \"hi\" \n", "hi"),
	)

	DescribeTable("pretty-prints anything else as application/json",
		func(raw, want string) {
			text, mime := registry.NormalizeSectionOutput(json.RawMessage(raw))
			Expect(mime).To(Equal("application/json"))
			Expect(text).To(Equal(want))
		},
		Entry("{content: 5}", `{"content":5}`, "{\n  \"content\": 5\n}"),
		Entry("{content: null}", `{"content":null}`, "{\n  \"content\": null\n}"),
		Entry("C7 object, sorted keys", `{"label":"json","count":42}`, "{\n  \"count\": 42,\n  \"label\": \"json\"\n}"),
		Entry("array", `[1,"a",{"b":null},true]`, "[\n  1,\n  \"a\",\n  {\n    \"b\": null\n  },\n  true\n]"),
		Entry("number", `42`, "42"),
		Entry("float 1.0 preserved", `1.0`, "1.0"),
		Entry("numbers kept verbatim", `[1.0,-0.5,1e3,12345678901234567890]`, "[\n  1.0,\n  -0.5,\n  1e3,\n  12345678901234567890\n]"),
		Entry("null", `null`, "null"),
		Entry("absent output", ``, "null"),
		Entry("boolean", `false`, "false"),
		Entry("empty object", `{}`, "{}"),
		Entry("empty array", `[]`, "[]"),
		Entry("nested empties", `{"b":[],"a":{}}`, "{\n  \"a\": {},\n  \"b\": []\n}"),
		Entry("bytewise key order", `{"b":1,"a":2,"B":3,"é":4}`, "{\n  \"B\": 3,\n  \"a\": 2,\n  \"b\": 1,\n  \"é\": 4\n}"),
		Entry("duplicate keys: last wins", `{"a":1,"a":2}`, "{\n  \"a\": 2\n}"),
		Entry("no HTML escaping, non-ASCII as is", `{"h":"<a&b> é \u2028"}`, "{\n  \"h\": \"<a&b> é \u2028\"\n}"),
		Entry("control characters escaped like serde", `["\u0001\b\f\n\r\t\"\\/"]`, "[\n  \"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\"\n]"),
		Entry("deep nesting", `{"a":{"b":{"c":[[]]}}}`, "{\n  \"a\": {\n    \"b\": {\n      \"c\": [\n        []\n      ]\n    }\n  }\n}"),
	)

	It("serves undecodable bytes verbatim rather than dropping them", func() {
		text, mime := registry.NormalizeSectionOutput(json.RawMessage(`{oops`))
		Expect(mime).To(Equal("application/json"))
		Expect(text).To(Equal("{oops"))
	})

	It("PrettyJSON rejects trailing data", func() {
		_, err := registry.PrettyJSON([]byte(`1 2`))
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("NormalizePromptOutput (J13, G1-G4)", Label("pure"), func() {
	It("wraps a string as one user text message with exact bytes", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`"str body <&>"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(1))
		Expect(string(msgs[0])).To(Equal(`{"content":{"text":"str body <&>","type":"text"},"role":"user"}`))
	})

	It("wraps {content: string} as one user text message", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`{"content":"obj body"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(1))
		Expect(string(msgs[0])).To(Equal(`{"content":{"text":"obj body","type":"text"},"role":"user"}`))
	})

	It("lets messages win over content", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`{"content":"x","messages":[{"role":"assistant","content":{"type":"text","text":"m"}}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(1))
		Expect(string(msgs[0])).To(MatchJSON(`{"role":"assistant","content":{"type":"text","text":"m"}}`))
	})

	It("passes messages through without validating them", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`{"messages":[1,"two",null]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(3))
		Expect(string(msgs[0])).To(Equal("1"))
		Expect(string(msgs[1])).To(Equal(`"two"`))
		Expect(string(msgs[2])).To(Equal("null"))
	})

	It("accepts an empty messages array", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`{"messages":[]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).NotTo(BeNil())
		Expect(msgs).To(BeEmpty())
		Expect(encode(registry.PromptGetResult{Description: "d", Messages: msgs})).To(Equal(`{"description":"d","messages":[]}`))
	})

	It("falls back to content when messages is not an array", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`{"messages":"nope","content":"y"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(msgs[0])).To(Equal(`{"content":{"text":"y","type":"text"},"role":"user"}`))
	})

	DescribeTable("rejects unsupported shapes with the exact message",
		func(raw string) {
			_, err := registry.NormalizePromptOutput(json.RawMessage(raw))
			Expect(err).To(MatchError(ContainSubstring("unsupported shape")))
			Expect(err).To(MatchError("prompt handler returned unsupported shape; expected string, { content }, or { messages: [...] }"))
		},
		Entry("{x:1}", `{"x":1}`),
		Entry("{content:5}", `{"content":5}`),
		Entry("{messages:null}", `{"messages":null}`),
		Entry("number", `5`),
		Entry("null", `null`),
		Entry("array", `[{"role":"user"}]`),
		Entry("absent", ``),
	)

	It("NormalizePromptArguments turns null/absent into {} and passes everything else", func() {
		Expect(string(registry.NormalizePromptArguments(nil))).To(Equal("{}"))
		Expect(string(registry.NormalizePromptArguments(json.RawMessage("null")))).To(Equal("{}"))
		Expect(string(registry.NormalizePromptArguments(json.RawMessage(`{"to":"alice@example.com"}`)))).To(Equal(`{"to":"alice@example.com"}`))
		Expect(string(registry.NormalizePromptArguments(json.RawMessage(`"x"`)))).To(Equal(`"x"`))
		Expect(string(registry.NormalizePromptArguments(json.RawMessage(`[1]`)))).To(Equal(`[1]`))
	})

	It("PromptGetResult encodes description and messages", func() {
		msgs, _ := registry.NormalizePromptOutput(json.RawMessage(`"hi"`))
		Expect(encode(registry.PromptGetResult{Description: "bdd prompt", Messages: msgs})).To(Equal(
			`{"description":"bdd prompt","messages":[{"content":{"text":"hi","type":"text"},"role":"user"}]}`))
	})
})
