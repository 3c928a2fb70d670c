package registry

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = group.Describe("on-change notifications (checklist H, J5, J6)", Label("notifications"), func() {
	It("H1 registering a skill fires {op:register,id}", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		id := scoped("notify")
		registerSkill(ctx, id, "# notify\n")
		Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).
			Should(ContainElement("register"))
		expectExactEvents(ev, "id")
	})

	It("H2 register then unregister fires register and unregister", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		id := scoped("notify-rm")
		registerSkill(ctx, id, "# notify\n")
		call(ctx, "skills::unregister", map[string]string{"id": id})
		Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).
			Should(ConsistOf("register", "unregister"))
		expectExactEvents(ev, "id")
	})

	It("H3 three quick registers fire three events", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		ids := []string{scoped("quick-a"), scoped("quick-b"), scoped("quick-c")}
		for _, id := range ids {
			registerSkill(ctx, id, "# quick\n")
		}
		for _, id := range ids {
			Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).
				Should(Equal([]string{"register"}), "events about %s", id)
		}
		expectExactEvents(ev, "id")
	})

	It("H4 registering a prompt fires {op:register,name}", func(ctx SpecContext) {
		ev := subscribe(ctx, "prompts")
		name := scoped("notify")
		registerPrompt(ctx, name, "bdd prompt", "bdd::notify")
		Eventually(func() []string { return eventOps(ev, "name", name) }).WithTimeout(eventLimit).
			Should(ContainElement("register"))
		expectExactEvents(ev, "name")
	})

	It("H5 prompt register then unregister fires register and unregister", func(ctx SpecContext) {
		ev := subscribe(ctx, "prompts")
		name := scoped("notify-rm")
		registerPrompt(ctx, name, "bdd prompt", "bdd::notify")
		call(ctx, "prompts::unregister", map[string]string{"name": name})
		Eventually(func() []string { return eventOps(ev, "name", name) }).WithTimeout(eventLimit).
			Should(ConsistOf("register", "unregister"))
		expectExactEvents(ev, "name")
	})

	It("J5 skill and prompt payloads carry exactly op and the id or name", Label("extra", "J5"), func(ctx SpecContext) {
		skills, prompts := subscribe(ctx, "skills"), subscribe(ctx, "prompts")
		id, name := nested("exact", "child"), scoped("exact")
		registerSkill(ctx, id, "# exact\n")
		call(ctx, "skills::unregister", map[string]string{"id": id})
		registerPrompt(ctx, name, "bdd prompt", "bdd::exact")
		call(ctx, "prompts::unregister", map[string]string{"name": name})
		Eventually(func() []map[string]any { return skills.About("id", id) }).WithTimeout(eventLimit).Should(HaveLen(2))
		Eventually(func() []map[string]any { return prompts.About("name", name) }).WithTimeout(eventLimit).Should(HaveLen(2))
		for i, op := range []string{"register", "unregister"} {
			Expect(withoutInjected(skills.About("id", id)[i])).To(Equal(map[string]any{"op": op, "id": id}))
			Expect(withoutInjected(prompts.About("name", name)[i])).To(Equal(map[string]any{"op": op, "name": name}))
		}
		expectExactEvents(skills, "id")
		expectExactEvents(prompts, "name")
		Expect(prompts.About("id", id)).To(BeEmpty(), "skill events reached a prompts::on-change subscription")
		Expect(skills.About("name", name)).To(BeEmpty(), "prompt events reached a skills::on-change subscription")
	})

	It("J6 no event for an unregister that removed nothing or a failed validation; re-register fires again", Label("extra", "J6"), func(ctx SpecContext) {
		skills, prompts := subscribe(ctx, "skills"), subscribe(ctx, "prompts")
		absent, again, marker := scoped("absent"), scoped("again"), scoped("marker")
		Expect(obj(ctx, "skills::unregister", map[string]string{"id": absent})).To(HaveKeyWithValue("removed", false))
		Expect(obj(ctx, "prompts::unregister", map[string]string{"name": absent})).To(HaveKeyWithValue("removed", false))
		fails(ctx, "skills::register", map[string]string{"id": absent, "skill": ""}, "skill must be non-empty")
		fails(ctx, "prompts::register", map[string]any{"name": absent, "description": " ", "function_id": "bdd::x"},
			"description must be non-empty")
		registerSkill(ctx, again, "# one\n")
		registerSkill(ctx, again, "# two\n")
		registerPrompt(ctx, marker, "bdd prompt", "bdd::marker")
		Eventually(func() []string { return eventOps(skills, "id", again) }).WithTimeout(eventLimit).
			Should(Equal([]string{"register", "register"}))
		Eventually(func() []string { return eventOps(prompts, "name", marker) }).WithTimeout(eventLimit).
			Should(Equal([]string{"register"}))
		Consistently(func() int { return len(skills.About("id", absent)) + len(prompts.About("name", absent)) }).
			WithTimeout(500 * time.Millisecond).Should(BeZero())
		expectExactEvents(skills, "id")
		expectExactEvents(prompts, "name")
	})

	It("J6 two subscriptions each receive every event", Label("extra", "J6"), func(ctx SpecContext) {
		first := subscribe(ctx, "skills")
		second, undo, err := client.Subscribe(ctx, "skills::on-change", fnID("notify-second"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(undo)
		id := scoped("fanout")
		Eventually(func() []map[string]any {
			registerSkill(ctx, id, "# fanout\n")
			return second.About("id", id)
		}).WithTimeout(15 * time.Second).ShouldNot(BeEmpty())
		Eventually(func() []map[string]any { return first.About("id", id) }).WithTimeout(eventLimit).ShouldNot(BeEmpty())
		expectExactEvents(first, "id")
		expectExactEvents(second, "id")
	})
})
