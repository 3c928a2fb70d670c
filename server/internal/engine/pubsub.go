package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// The iii-pubsub worker's function and trigger type (iii 0.23: `publish`
// {topic, data} and `subscribe` bindings configured with {topic}). The
// subscriber function receives data as published.
const (
	publishFunction        = iii.Publish
	subscribeTriggerType   = iii.Subscribe
	subscribeDescription   = "Subscribe to a topic"
	pubsubWorkerName       = "iii-pubsub"
	codeTopicNotSet        = "topic_not_set"
	messageTopicNotSet     = "Topic is not set"
	subscribeConfigExample = `{"topic":"orders"}`
)

var (
	schemaPublishInput    = json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","description":"The topic to publish to"},"data":{"description":"The event payload"}},"required":["topic"]}`)
	schemaSubscribeConfig = json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
)

// PubSub carries published events to the subscribers of every engine that
// shares it. Each engine has its own unless Config.PubSub hands several
// the same one: that is the in-process stand-in for the real engine's
// `redis` adapter of iii-pubsub (every engine on one Redis hears every
// publish), which lets tests run a cluster without Redis. Delivery is
// at-most-once, as with Redis pub/sub.
type PubSub struct {
	mu      sync.RWMutex
	engines map[*Engine]struct{}
}

// NewPubSub returns a bus no engine uses yet.
func NewPubSub() *PubSub { return &PubSub{engines: map[*Engine]struct{}{}} }

func (p *PubSub) attach(e *Engine) {
	p.mu.Lock()
	p.engines[e] = struct{}{}
	p.mu.Unlock()
}

func (p *PubSub) detach(e *Engine) {
	p.mu.Lock()
	delete(p.engines, e)
	p.mu.Unlock()
}

func (p *PubSub) publish(topic string, data json.RawMessage) {
	p.mu.RLock()
	engines := make([]*Engine, 0, len(p.engines))
	for e := range p.engines {
		engines = append(engines, e)
	}
	p.mu.RUnlock()
	for _, e := range engines {
		e.deliverPublished(topic, data)
	}
}

func (e *Engine) pubsubBuiltins() []*builtin {
	return []*builtin{
		{id: publishFunction, description: "Publishes an event", request: schemaPublishInput, response: schemaAny, call: e.publish},
	}
}

// publish serves the `publish` function: {topic, data} reaches every
// subscribe binding of topic on every engine sharing the bus. It answers
// no result, like iii-pubsub.
func (e *Engine) publish(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	a, errb := parseArgs(publishFunction, data, true, `{"topic":"orders","data":{"id":1}}`)
	if errb != nil {
		return nil, errb
	}
	topic, errb := a.str("topic")
	if errb != nil {
		return nil, errb
	}
	if topic == "" {
		return nil, &wire.ErrorBody{Code: codeTopicNotSet, Message: messageTopicNotSet}
	}
	payload, ok := a.raw("data")
	if !ok {
		payload = jsonNull
	}
	e.pubsub.publish(topic, payload)
	return nil, nil
}

// parseSubscribeTopic reads a subscribe binding's config. The real engine
// accepts a binding without a topic and never fires it; ours refuses it,
// so the mistake is seen when the binding is made.
func parseSubscribeTopic(cfg json.RawMessage) (string, error) {
	var c struct {
		Topic *string `json:"topic"`
	}
	d := bytes.TrimSpace(cfg)
	if len(d) == 0 || d[0] != '{' || json.Unmarshal(d, &c) != nil || c.Topic == nil {
		return "", fmt.Errorf("subscribe trigger config must be an object with a string topic, like %s; got %s", subscribeConfigExample, string(clipConfig(d)))
	}
	if *c.Topic == "" {
		return "", fmt.Errorf("subscribe trigger config: topic must not be empty (like %s)", subscribeConfigExample)
	}
	return *c.Topic, nil
}

func clipConfig(d []byte) []byte {
	if len(d) == 0 {
		return []byte("nothing")
	}
	if len(d) > 80 {
		return append(d[:80:80], "…"...)
	}
	return d
}

// deliverPublished calls each subscribe binding of topic on this engine,
// through the binding's own FIFO queue (see fireBuiltin).
func (e *Engine) deliverPublished(topic string, data json.RawMessage) {
	if e.isClosing() {
		return
	}
	e.mu.RLock()
	var targets []builtinTarget
	if e.builtinBinds[subscribeTriggerType] > 0 {
		for _, b := range e.bindings {
			if b.onBuiltin && b.triggerType == subscribeTriggerType && b.topic == topic {
				targets = append(targets, builtinTarget{bindingID: b.id, functionID: b.functionID, metadata: b.metadata, owner: b.owner})
			}
		}
	}
	e.mu.RUnlock()
	e.fireBuiltin(subscribeTriggerType, targets, data)
}
