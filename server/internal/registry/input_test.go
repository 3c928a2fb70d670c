package registry_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("function payload decoding", Label("pure"), func() {
	It("decodes strings with escapes, unicode and nested unknown keys like encoding/json", func() {
		raw := `{ "_caller_worker_id": {"a":[1,"}]",{"b":null}]}, "id" : "a\/b", "skill":"é \"q\" \u00e9\n\\ ✓" }`
		in, err := registry.DecodeRegisterSkillInput(json.RawMessage(raw))
		Expect(err).NotTo(HaveOccurred())
		var want struct{ ID, Skill string }
		Expect(json.Unmarshal([]byte(raw), &want)).To(Succeed())
		Expect(in).To(Equal(registry.RegisterSkillInput{ID: want.ID, Skill: want.Skill}))
	})

	DescribeTable("refuses bad payloads with serde's messages",
		func(raw, want string) {
			_, err := registry.DecodeRegisterSkillInput(json.RawMessage(raw))
			Expect(err).To(MatchError(want))
		},
		Entry("absent", ``, "invalid type: null, expected struct RegisterSkillInput"),
		Entry("null", `null`, "invalid type: null, expected struct RegisterSkillInput"),
		Entry("a number", `5`, "invalid type: integer `5`, expected struct RegisterSkillInput"),
		Entry("a float", `1.5`, "invalid type: floating point `1.5`, expected struct RegisterSkillInput"),
		Entry("a wrongly typed id", `{"id":5,"skill":"x"}`, "invalid type: integer `5`, expected a string"),
		Entry("a missing skill", `{"id":"a"}`, "missing field `skill`"),
		Entry("a duplicate id", `{"id":"a","id":"b","skill":"x"}`, "duplicate field `id`"),
	)

	DescribeTable("never panics on malformed JSON",
		func(raw string) {
			_, err := registry.DecodeRegisterSkillInput(json.RawMessage(raw))
			Expect(err).To(HaveOccurred())
		},
		Entry("unterminated object", `{"id":"a"`),
		Entry("unterminated string", `{"id":"a`),
		Entry("missing colon", `{"id" "a"}`),
		Entry("missing value", `{"id":}`),
		Entry("bare key", `{id:"a"}`),
		Entry("trailing garbage", `{"id":"a","skill":"b"} x`),
		Entry("dangling comma", `{"id":"a",`),
		Entry("control character in a string", "{\"id\":\"a\x01\",\"skill\":\"b\"}"),
	)

	It("decodes fetch payloads: uri may be null, uris must hold strings", func() {
		in, err := registry.DecodeFetchInput(json.RawMessage(`{"uri":null,"uris":["iii://a","iii://b"]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(in.URI).To(BeNil())
		Expect(in.URIs).To(Equal([]string{"iii://a", "iii://b"}))
		_, err = registry.DecodeFetchInput(json.RawMessage(`{"uris":"iii://a"}`))
		Expect(err).To(MatchError("invalid type: string \"iii://a\", expected a sequence"))
	})
})
