package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// twoNodes starts two registry instances, each on its own embedded engine;
// the engines share one state store, like real engines on one Redis.
// With sharedBus they also share pubsub; without, every broadcast is lost
// and only the reconcile carries changes across.
func twoNodes(t testing.TB, sharedBus bool, opts ...func(*stack, *Options)) (a, b *stack) {
	t.Helper()
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	busA, busB := engine.NewPubSub(), engine.NewPubSub()
	if sharedBus {
		busB = busA
	}
	opts = append([]func(*stack, *Options){func(_ *stack, o *Options) {
		o.Cluster.ReconcileInterval, o.Cluster.MinRelistInterval = 20*time.Millisecond, 20*time.Millisecond
	}}, opts...)
	a = startStackOn(t, engine.Config{Store: st, PubSub: busA}, nil, opts...)
	b = startStackOn(t, engine.Config{Store: st, PubSub: busB}, nil, opts...)
	return a, b
}

// subscribe binds skills::on-change and prompts::on-change on s's caller
// and returns the events as "skill register x", "prompt unregister p".
func subscribe(t testing.TB, s *stack, name string) <-chan string {
	t.Helper()
	events := make(chan string, 64)
	for _, kind := range []string{"skill", "prompt"} {
		fn, typ, key := "sub::"+name+"-skills", rules.TriggerSkillsOnChange, "id"
		if kind == "prompt" {
			fn, typ, key = "sub::"+name+"-prompts", rules.TriggerPromptsOnChange, "name"
		}
		if _, err := s.caller.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			events <- fmt.Sprintf("%s %v %v", kind, m["op"], m[key])
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.caller.RegisterTrigger(fn, typ, fn, nil); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 5*time.Second, "the subscriptions are bound", func() bool {
		return len(s.worker.skillSubs.Bindings()) == 1 && len(s.worker.promptSubs.Bindings()) == 1
	})
	return events
}

func expectEvent(t testing.TB, events <-chan string, want string) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("event %q; want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event; want %q", want)
	}
}

func listedIDs(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	var out struct {
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	s.mustCall(t, rules.FnSkillsList, nil, &out)
	ids := map[string]bool{}
	for _, sk := range out.Skills {
		ids[sk.ID] = true
	}
	return ids
}

func promptNames(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	var out struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	s.mustCall(t, rules.FnPromptsList, nil, &out)
	names := map[string]bool{}
	for _, p := range out.Prompts {
		names[p.Name] = true
	}
	return names
}

// A write through either node is served by the other, which tells its own
// subscribers once; the writer tells its subscribers once too.
func TestClusterWritesOnOneNodeShowOnTheOther(t *testing.T) {
	a, b := twoNodes(t, true, func(_ *stack, o *Options) { o.ServeLabel = "production" })
	evA, evB := subscribe(t, a, "a"), subscribe(t, b, "b")

	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "x", "skill": "# x\n\nfrom a\n"}, nil)
	expectEvent(t, evA, "skill register x")
	expectEvent(t, evB, "skill register x")
	if got, err := readURI(t, b, "iii://x"); err != nil || got != "# x\n\nfrom a\n" {
		t.Fatalf("b reads iii://x: %q, %v", got, err)
	}
	if !listedIDs(t, b)["x"] {
		t.Fatal("b's skills::list lacks x")
	}
	if idx, _ := readURI(t, b, "iii://skills"); !strings.Contains(idx, "iii://x") {
		t.Fatalf("b's index lacks x:\n%s", idx)
	}

	// Versions and the serve label written through b are served by a.
	b.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "x", "skill": "# x\n\nv2 from b\n"}, nil)
	expectEvent(t, evB, "skill register x")
	expectEvent(t, evA, "skill register x") // one event: not a second for a's own echo
	b.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "x", "label": "production", "version": 1}, nil)
	expectEvent(t, evB, "skill register x")
	expectEvent(t, evA, "skill register x")
	if got, _ := readURI(t, a, "iii://x"); got != "# x\n\nfrom a\n" {
		t.Fatalf("a serves %q after b labelled version 1 production", got)
	}

	a.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "p", "description": "d", "function_id": "f::g"}, nil)
	expectEvent(t, evA, "prompt register p")
	expectEvent(t, evB, "prompt register p")
	if !promptNames(t, b)["p"] {
		t.Fatal("b's prompts::list lacks p")
	}

	b.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "x"}, nil)
	expectEvent(t, evB, "skill unregister x")
	expectEvent(t, evA, "skill unregister x")
	if listedIDs(t, a)["x"] {
		t.Fatal("a still lists x after b unregistered it")
	}
	b.mustCall(t, rules.FnPromptsUnregister, map[string]string{"name": "p"}, nil)
	expectEvent(t, evB, "prompt unregister p")
	expectEvent(t, evA, "prompt unregister p")

	// Nothing was missed: a reconcile costs one read and re-lists nothing.
	for _, s := range []*stack{a, b} {
		testutil.Eventually(t, 5*time.Second, "every change is applied", func() bool { return upToDate(s) })
		if relisted, err := s.reg.Cluster().Reconcile(context.Background()); err != nil || relisted {
			t.Fatalf("reconcile with nothing missed: relisted %v, %v", relisted, err)
		}
	}
	select {
	case ev := <-evA:
		t.Fatalf("a got an extra event %q", ev)
	case ev := <-evB:
		t.Fatalf("b got an extra event %q", ev)
	default:
	}
}

// A lost broadcast is found in the change log: the other node re-reads
// that key alone, long before it may re-list (a node that re-listed at its
// connect, as after a restart, may not re-list again for a while).
func TestClusterCatchesUpFromTheChangeLogWithoutRelisting(t *testing.T) {
	a, b := twoNodes(t, false, func(_ *stack, o *Options) { o.Cluster.MinRelistInterval = time.Hour })
	evB := subscribe(t, b, "b")
	relists := b.reg.Cluster().Stats().Relists
	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "logged", "skill": "# logged\n"}, nil)
	expectEvent(t, evB, "skill register logged")
	a.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "logged-p", "description": "d", "function_id": "f::g"}, nil)
	expectEvent(t, evB, "prompt register logged-p")
	a.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "logged"}, nil)
	expectEvent(t, evB, "skill unregister logged")
	if got := b.reg.Cluster().Stats().Relists; got != relists {
		t.Fatalf("b re-listed %d times to catch up; want the change log to close the gaps", got-relists)
	}
}

// With every broadcast lost, the periodic reconcile still brings the other
// node in step and tells its subscribers once per change.
func TestClusterReconcileRepairsLostBroadcasts(t *testing.T) {
	a, b := twoNodes(t, false)
	evB := subscribe(t, b, "b")

	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "lost", "skill": "# lost\n\nbody\n"}, nil)
	expectEvent(t, evB, "skill register lost")
	if got, err := readURI(t, b, "iii://lost"); err != nil || got != "# lost\n\nbody\n" {
		t.Fatalf("b reads %q, %v", got, err)
	}
	a.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "lp", "description": "d", "function_id": "f::g"}, nil)
	expectEvent(t, evB, "prompt register lp")
	a.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "lost"}, nil)
	expectEvent(t, evB, "skill unregister lost")
	testutil.Eventually(t, 5*time.Second, "b no longer lists lost", func() bool { return !listedIDs(t, b)["lost"] })

	// A write b makes itself is not announced twice by its reconcile.
	b.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "mine", "skill": "# mine\n"}, nil)
	expectEvent(t, evB, "skill register mine")
	testutil.Eventually(t, 5*time.Second, "b is up to date", func() bool { return upToDate(b) })
	if _, err := b.reg.Cluster().Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-evB:
		t.Fatalf("b got an extra event %q", ev)
	default:
	}
}

// BenchmarkReconcileUnchanged10K is the periodic reconcile of a registry
// holding 10 000 skills when nothing changed: one state::get of the
// generation, however large the catalog.
func BenchmarkReconcileUnchanged10K(b *testing.B) {
	s := startStack(b, b.TempDir(), func(_ *stack, o *Options) { o.Cluster.ReconcileInterval = time.Hour })
	loadSkills(b, s, 10000)
	ctx := context.Background()
	testutil.Eventually(b, 5*time.Second, "the registry applied every change", func() bool { return upToDate(s) })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		relisted, err := s.reg.Cluster().Reconcile(ctx)
		if err != nil || relisted {
			b.Fatalf("reconcile: relisted %v, %v", relisted, err)
		}
	}
}

// BenchmarkReconcileMissed10K is the same reconcile after a missed change:
// a full re-list of 10 000 skills (and the prompts), for comparison.
func BenchmarkReconcileMissed10K(b *testing.B) {
	s := startStack(b, b.TempDir(), func(_ *stack, o *Options) { o.Cluster.ReconcileInterval = time.Hour })
	loadSkills(b, s, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.reg.Cluster().Relist(ctx); err != nil {
			b.Fatalf("re-list: %v", err)
		}
	}
}

// BenchmarkClusterPropagation is write on a → applied on b and announced
// to b's subscriber, for two embedded engines sharing state and pubsub in
// process (the real-engine figure is clustertest's BenchmarkPropagation).
func BenchmarkClusterPropagation(b *testing.B) {
	a, bn := twoNodes(b, true)
	events := subscribe(b, bn, "b")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("p/%d", i)
		t0 := time.Now()
		a.mustCall(b, rules.FnSkillsRegister, map[string]string{"id": id, "skill": "# p\n"}, nil)
		expectEvent(b, events, "skill register "+id)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// TestSingleNodeDoesNotBroadcast: on the embedded engine of --standalone
// no other instance shares state, so a write neither bumps the shared
// generation nor publishes (a commit and a frame saved per write).
func TestSingleNodeDoesNotBroadcast(t *testing.T) {
	s := startStack(t, t.TempDir(), standalone)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "solo", "skill": "# solo\n"}, nil)
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "solo", "label": "staging", "version": 1}, nil)
	gen, _, err := s.state.Get(context.Background(), "skills.cluster", "generation")
	if err != nil || gen != nil {
		t.Fatalf("a single node bumped the shared generation: %s %v", gen, err)
	}
	// The same write on an instance that may have peers does bump it.
	p := startStack(t, t.TempDir())
	p.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "peer", "skill": "# peer\n"}, nil)
	gen, _, err = p.state.Get(context.Background(), "skills.cluster", "generation")
	if err != nil || !strings.Contains(string(gen), `"n"`) {
		t.Fatalf("generation after a write with peers: %s", gen)
	}
}

// upToDate reports whether s applied every change up to the shared
// generation.
func upToDate(s *stack) bool {
	missing, err := s.reg.Cluster().Missing(context.Background())
	return err == nil && missing == 0
}

// Forged skills::changes messages, from any client over a real socket,
// while 1 000 large skills are registered: none makes the registry re-list
// (the attack took 62 % of a core and a 1.96 GB peak when every gap it
// faked re-listed everything), and none makes it re-read a key while the
// shared counter shows every change applied: another registry's scope, a
// key that cannot be one, hops far beyond the counter, real keys over and
// over. A counter bumped by hand re-lists at most once per
// MinRelistInterval.
func TestForgedChangesDoNotForceRelists(t *testing.T) {
	s := startStack(t, t.TempDir(), func(_ *stack, o *Options) {
		o.Cluster.ReconcileInterval = 20 * time.Millisecond
		o.Cluster.MinRelistInterval = time.Hour
	})
	const skills = 1000
	large := strings.Repeat("Lorem ipsum dolor sit amet. ", 16<<10/28)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range skills {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": fmt.Sprintf("big/s%d", i), "skill": fmt.Sprintf("# S%d\n\n%s", i, large)}, nil)
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, "the registry applied its own writes", func() bool { return upToDate(s) })
	before := s.reg.Cluster().Stats()

	attacker := iii.RegisterWorker(s.engine.URL(), iii.WithName("attacker"), iii.WithLogger(quiet))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := attacker.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	publish := func(msg map[string]any) {
		data, _ := json.Marshal(map[string]any{"topic": "skills::changes", "data": msg})
		if _, err := attacker.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.Publish, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	// The counter any client can read: a hop from it is what would move
	// the applied generation.
	raw, err := attacker.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.StateGet, Data: json.RawMessage(`{"scope":"skills.cluster","key":"generation"}`)})
	var gen struct{ N int64 }
	if err != nil || json.Unmarshal(raw, &gen) != nil || gen.N == 0 {
		t.Fatalf("generation %s, %v", raw, err)
	}
	const each = 300
	for i := range each {
		// A hop from the current counter to far beyond it (made the
		// registry see a reset and re-list at every check).
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": "big/s2", "from": gen.N, "to": gen.N + 1_000_000})
		// Another registry's scope, a key no skill can have, a key of a
		// megabyte-long… all dropped before any read.
		publish(map[string]any{"node": "forger", "scope": "other", "op": "set", "key": "x"})
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": "../../etc/passwd"})
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": strings.Repeat("k", 2048)})
		// Hops that would move what was applied far past the counter.
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": "big/s1", "from": 1_000_000 + i, "to": 1_000_001 + i})
		// A real key over and over, with a hop that is no increment.
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "delete", "key": fmt.Sprintf("big/s%d", i%10), "from": 0, "to": 1 << 40})
	}
	// Pub/sub is at-most-once: wait until the messages stop arriving.
	last := s.reg.Cluster().Stats()
	testutil.Eventually(t, 20*time.Second, "the forged messages were handled", func() bool {
		time.Sleep(200 * time.Millisecond) // ten reconciles
		st := s.reg.Cluster().Stats()
		settled := st == last && st.Dropped > before.Dropped
		last = st
		return settled
	})
	after := s.reg.Cluster().Stats()
	if after.Relists != before.Relists {
		t.Fatalf("forged messages made the registry re-list %d times", after.Relists-before.Relists)
	}
	// With every change up to the counter applied, no message can name an
	// unapplied one: not a single key was re-read.
	if n := after.Applied - before.Applied; n != 0 {
		t.Fatalf("%d keys re-read for forged messages while the counter showed nothing unapplied", n)
	}
	if !upToDate(s) {
		t.Fatal("forged hops moved the applied generation")
	}
	if got, err := readURI(t, s, "iii://big/s1"); err != nil || !strings.HasPrefix(got, "# S1\n") {
		t.Fatalf("iii://big/s1 after the forged messages: %.20q, %v", got, err)
	}

	// Bumping the counter by hand fakes a missed change: at most one re-list.
	bump := json.RawMessage(`{"scope":"skills.cluster","key":"generation","ops":[{"type":"increment","path":"n","by":1}]}`)
	for range 5 {
		if _, err := attacker.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.StateUpdate, Data: bump}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond) // three reconciles: the gap persists
	}
	if n := s.reg.Cluster().Stats().Relists - before.Relists; n > 1 {
		t.Fatalf("%d re-lists for a counter bumped by hand 5 times within MinRelistInterval; want at most 1", n)
	}
}
