package engine

import (
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/store"
)

func TestPublishReachesSubscribersOfItsTopicOnly(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::orders", nil)
	bind(sub, "b-orders", "subscribe", "sub::orders", map[string]any{"topic": "orders"})
	bind(sub, "b-other", "subscribe", "sub::orders", map[string]any{"topic": "other"})
	if got := triggerProvider(t, sub, "subscribe"); got != "iii-pubsub" {
		t.Fatalf("subscribe provider = %q; want the engine's iii-pubsub", got)
	}

	pub := dialWorker(t, e.URL())
	if res := pub.result("publish", map[string]any{"topic": "orders", "data": map[string]any{"id": 1}}); res != nil {
		t.Fatalf("publish answered %s; want no result, like iii-pubsub", res)
	}
	in := sub.expect("invokefunction")
	if in.str("function_id") != "sub::orders" || in.obj("data")["id"] != float64(1) {
		t.Fatalf("subscriber got %s; want sub::orders with the published data", in.raw)
	}
	sub.sync() // nothing for topic "other"
}

func TestPublishRefusesBadInputAndSubscribeABindingWithoutTopic(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	if code, msg := w.callErr("publish", map[string]any{"topic": "", "data": 1}); code != codeTopicNotSet || msg != messageTopicNotSet {
		t.Fatalf("empty topic: %s %q", code, msg)
	}
	if _, msg := w.callErr("publish", map[string]any{"data": 1}); !strings.Contains(msg, "publish: topic is required (expected a string)") {
		t.Fatalf("missing topic: %q", msg)
	}
	if _, msg := w.callErr("publish", []int{1}); !strings.Contains(msg, "must be a JSON object") {
		t.Fatalf("array input: %q", msg)
	}
	w.register("sub::cb", nil)
	for _, cfg := range []any{nil, map[string]any{"topic": ""}, map[string]any{"topic": 7}} {
		w.send(map[string]any{"type": "registertrigger", "id": "b", "trigger_type": "subscribe", "function_id": "sub::cb", "config": cfg})
		f := w.expect("triggerregistrationresult")
		if msg, _ := f.obj("error")["message"].(string); !strings.Contains(msg, "subscribe trigger config") {
			t.Fatalf("config %v: %s; want a refusal that names the subscribe config", cfg, f.raw)
		}
	}
	// A worker cannot take over the publish function.
	w.send(map[string]any{"type": "registerfunction", "id": "publish"})
	if f := w.expect("registrationrejected"); f.str("function_id") != "publish" {
		t.Fatalf("publish takeover: %s", f.raw)
	}
}

// Two engines on one store and one bus are the in-process model of two
// real engines on one Redis: shared state, publishes heard by both, and
// state triggers fired only by the engine that did the write.
func TestEnginesSharingStoreAndBusBehaveLikeARedisCluster(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	bus := NewPubSub()
	a := startEngine(t, Config{Store: st, PubSub: bus})
	b := startEngine(t, Config{Store: st, PubSub: bus})

	onB := dialWorker(t, b.URL())
	onB.register("sub::changes", nil)
	onB.register("sub::state", nil)
	bind(onB, "b-topic", "subscribe", "sub::changes", map[string]any{"topic": "changes"})
	bind(onB, "b-state", "state", "sub::state", map[string]any{"scope": "s"})

	onA := dialWorker(t, a.URL())
	onA.result("state::set", map[string]any{"scope": "s", "key": "k", "value": "v"})
	if got := string(onB.result("state::get", map[string]any{"scope": "s", "key": "k"})); got != `"v"` {
		t.Fatalf("B reads %s; want the value A wrote", got)
	}
	onA.result("publish", map[string]any{"topic": "changes", "data": "hello"})
	in := onB.expect("invokefunction")
	if in.str("function_id") != "sub::changes" {
		t.Fatalf("B's first call is %s; want the publish (A's state write must not fire B's state trigger)", in.raw)
	}
	_ = a.Close()
	// The shared store outlives an engine that closes.
	if got := string(onB.result("state::get", map[string]any{"scope": "s", "key": "k"})); got != `"v"` {
		t.Fatalf("after A closed, B reads %s", got)
	}
}
