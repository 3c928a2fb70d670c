package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Versions, labels and rollback (ours; not upstream v0.2.2): a registry
// that does not list skills::versions skips these specs, so the suite still
// checks upstream unchanged. History outlives a spec's clean-up (it is
// meant to outlive unregister), so every spec uses ids of its own.

type version struct {
	Version      int      `json:"version"`
	RegisteredAt string   `json:"registered_at"`
	Bytes        int      `json:"bytes"`
	SHA256       string   `json:"sha256"`
	Message      string   `json:"message"`
	Author       string   `json:"author"`
	Labels       []string `json:"labels"`
}

type listing struct {
	ID       string         `json:"id"`
	Latest   int            `json:"latest"`
	Labels   map[string]int `json:"labels"`
	Versions []version      `json:"versions"`
}

func versionsOf(ctx context.Context, fn, key, id string) listing {
	GinkgoHelper()
	var l listing
	callInto(ctx, fn, map[string]any{key: id}, &l)
	return l
}

func register(ctx context.Context, id, body string, extra map[string]string) {
	GinkgoHelper()
	p := map[string]string{"id": id, "skill": body}
	for k, v := range extra {
		p[k] = v
	}
	call(ctx, "skills::register", p)
}

var _ = group.Describe("versions, labels and rollback (V)", Label("versions"), func() {
	BeforeEach(func(ctx SpecContext) {
		ids, err := client.FunctionIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		if !slices.Contains(ids, "skills::versions") {
			Skip("the registry under test has no skills::versions")
		}
	})

	It("V1 a changed body becomes the next version with bytes, sha256, message and author; the same body again makes none", func(ctx SpecContext) {
		id := scoped("v1")
		register(ctx, id, "# One\n", map[string]string{"message": "first", "author": "ci"})
		register(ctx, id, "# One\n", nil)
		register(ctx, id, "# Two!\n", map[string]string{"message": "second"})
		l := versionsOf(ctx, "skills::versions", "id", id)
		Expect(l.ID).To(Equal(id))
		Expect(l.Latest).To(Equal(2))
		Expect(l.Labels).To(Equal(map[string]int{"latest": 2}))
		Expect(l.Versions).To(HaveLen(2))
		newest, oldest := l.Versions[0], l.Versions[1]
		Expect(newest.Version).To(Equal(2))
		Expect(newest.Message).To(Equal("second"))
		Expect(newest.Labels).To(Equal([]string{"latest"}))
		Expect(newest.Bytes).To(Equal(len("# Two!\n")))
		Expect(oldest.Version).To(Equal(1))
		Expect(oldest.Author).To(Equal("ci"))
		sum := sha256.Sum256([]byte("# One\n"))
		Expect(oldest.SHA256).To(Equal(hex.EncodeToString(sum[:])))
		Expect(oldest.RegisteredAt).NotTo(BeEmpty())
	})

	It("V2 iii://{id}@{version} and iii://{id}@{label} read old content in resources-read and skill::fetch", func(ctx SpecContext) {
		id := scoped("v2")
		register(ctx, id, "# Old\n", nil)
		register(ctx, id, "# New\n", nil)
		Expect(read(ctx, "iii://"+id+"@1").Text).To(Equal("# Old\n"))
		Expect(read(ctx, "iii://"+id+"@latest").Text).To(Equal("# New\n"))
		Expect(read(ctx, "iii://"+id).Text).To(Equal("# New\n"))
		Expect(fetch(ctx, "skill::fetch", map[string]any{"uri": "iii://" + id + "@1"})).To(ContainSubstring("# Old"))
		fails(ctx, "skills::resources-read", map[string]any{"uri": "iii://" + id + "@9"}, "has no version 9")
		fails(ctx, "skills::resources-read", map[string]any{"uri": "iii://" + id + "@nope"}, `no label "nope"`)
	})

	It("V3 labels point at versions; latest is the registry's only", func(ctx SpecContext) {
		id := scoped("v3")
		register(ctx, id, "a\n", nil)
		register(ctx, id, "b\n", nil)
		m := obj(ctx, "skills::label", map[string]any{"id": id, "label": "production", "version": 1})
		Expect(m).To(HaveKeyWithValue("version", BeEquivalentTo(1)))
		Expect(read(ctx, "iii://"+id+"@production").Text).To(Equal("a\n"))
		m = obj(ctx, "skills::label", map[string]any{"id": id, "label": "staging", "version": "production"})
		Expect(m).To(HaveKeyWithValue("version", BeEquivalentTo(1)))
		l := versionsOf(ctx, "skills::versions", "id", id)
		Expect(l.Labels).To(Equal(map[string]int{"latest": 2, "production": 1, "staging": 1}))
		Expect(l.Versions[1].Labels).To(Equal([]string{"production", "staging"}))
		fails(ctx, "skills::label", map[string]any{"id": id, "label": "latest", "version": 1}, "latest")
		fails(ctx, "skills::label", map[string]any{"id": id, "label": "x", "version": 7}, "no version 7")
	})

	It("V4 rollback registers an old body as a new version; history is never rewritten", func(ctx SpecContext) {
		id := scoped("v4")
		register(ctx, id, "good\n", nil)
		register(ctx, id, "bad\n", nil)
		m := obj(ctx, "skills::rollback", map[string]any{"id": id, "version": 1})
		Expect(m).To(HaveKeyWithValue("version", BeEquivalentTo(3)))
		Expect(read(ctx, "iii://"+id).Text).To(Equal("good\n"))
		l := versionsOf(ctx, "skills::versions", "id", id)
		Expect(l.Latest).To(Equal(3))
		Expect(l.Versions).To(HaveLen(3))
		Expect(read(ctx, "iii://"+id+"@2").Text).To(Equal("bad\n"))
	})

	It("V5 skills::diff is a unified diff between two versions", func(ctx SpecContext) {
		id := scoped("v5")
		register(ctx, id, "# T\nkeep\nold\n", nil)
		register(ctx, id, "# T\nkeep\nnew\n", nil)
		m := obj(ctx, "skills::diff", map[string]any{"id": id, "from": 1, "to": "latest"})
		Expect(m["diff"]).To(Equal("--- " + id + "@1\n+++ " + id + "@2\n@@ -1,3 +1,3 @@\n # T\n keep\n-old\n+new\n"))
	})

	It("V6 unregister keeps history and a later register continues the numbering", func(ctx SpecContext) {
		id := scoped("v6")
		register(ctx, id, "one\n", nil)
		register(ctx, id, "two\n", nil)
		call(ctx, "skills::unregister", map[string]any{"id": id})
		Expect(read(ctx, "iii://"+id+"@1").Text).To(Equal("one\n"))
		register(ctx, id, "three\n", nil)
		Expect(versionsOf(ctx, "skills::versions", "id", id).Latest).To(Equal(3))
		fails(ctx, "skills::versions", map[string]any{"id": scoped("never")}, "has no versions")
	})

	It("V7 prompts have versions, labels and rollback", func(ctx SpecContext) {
		name := scoped("vp")
		for _, d := range []string{"one", "one", "two"} {
			call(ctx, "prompts::register", map[string]any{"name": name, "description": d, "function_id": "bdd::vp", "message": d})
		}
		l := versionsOf(ctx, "prompts::versions", "name", name)
		Expect(l.Latest).To(Equal(2))
		Expect(l.Versions[0].Message).To(Equal("two"))
		obj(ctx, "prompts::label", map[string]any{"name": name, "label": "stable", "version": 1})
		m := obj(ctx, "prompts::rollback", map[string]any{"name": name, "version": "stable"})
		Expect(m).To(HaveKeyWithValue("version", BeEquivalentTo(3)))
		var list struct {
			Prompts []map[string]any `json:"prompts"`
		}
		callInto(ctx, "prompts::mcp-list", map[string]any{}, &list)
		Expect(slices.ContainsFunc(list.Prompts, func(p map[string]any) bool {
			return p["name"] == name && p["description"] == "one"
		})).To(BeTrue(), "prompt %s serves description one after rollback: %v", name, list.Prompts)
	})

	It("V8 rollback fires skills::on-change register with upstream's payload", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		id := scoped("v8")
		register(ctx, id, "one\n", nil)
		register(ctx, id, "two\n", nil)
		// Both registrations' events first, so the next one is the rollback's.
		Eventually(func() int { return len(ev.About("id", id)) }).WithTimeout(eventLimit).
			WithPolling(20 * time.Millisecond).Should(BeNumerically(">=", 2))
		before := len(ev.About("id", id))
		call(ctx, "skills::rollback", map[string]any{"id": id, "version": 1})
		Eventually(func() int { return len(ev.About("id", id)) }).WithTimeout(eventLimit).
			WithPolling(20 * time.Millisecond).Should(BeNumerically(">", before))
		events := ev.About("id", id) // one snapshot: more may arrive meanwhile
		last := events[len(events)-1]
		Expect(payloadKeys(last)).To(Equal([]string{"id", "op"}))
		Expect(last["op"]).To(Equal("register"))
	})
})
