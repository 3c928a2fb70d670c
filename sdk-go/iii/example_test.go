package iii_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/iii-skills/skills/sdk-go/iii"
)

type AddIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

// A worker that serves one typed function and calls another worker's
// function through the engine.
func ExampleRegisterWorker() {
	c := iii.RegisterWorker(iii.DefaultEngineURL, iii.WithName("calculator"))
	defer c.Close()

	if _, err := iii.RegisterFunctionTyped(c, "math::add", func(ctx context.Context, in AddIn) (AddOut, error) {
		return AddOut{Sum: in.A + in.B}, nil
	}, iii.RegisterFunctionOptions{Description: "Adds two integers"}); err != nil {
		log.Fatal(err)
	}

	// RegisterWorker is already connecting; Trigger waits for the connection
	// (calls made before it are queued), bounded by ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "math::add", Data: json.RawMessage(`{"a":2,"b":3}`)})
	var ie *iii.InvocationError
	switch {
	case errors.As(err, &ie):
		log.Printf("math::add failed with %s: %s", ie.Code, ie.Message)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(string(res)) // {"sum":5}
	}
}

// A trigger-type provider: it remembers bindings through the handler and
// fires them all when something changes.
func ExampleClient_RegisterTriggerType() {
	c := iii.RegisterWorker(iii.DefaultEngineURL)
	defer c.Close()

	ref, err := c.RegisterTriggerType("skills::on-change", "Fires when a skill changes", logBindings{})
	if err != nil {
		log.Fatal(err)
	}
	// Later, on each change:
	if err := ref.Fire(context.Background(), json.RawMessage(`{"op":"register","id":"x"}`)); err != nil {
		log.Print(err)
	}
}

type logBindings struct{}

func (logBindings) RegisterTrigger(_ context.Context, cfg iii.TriggerConfig) error {
	log.Printf("bound %s -> %s (config %s)", cfg.ID, cfg.FunctionID, cfg.Config)
	return nil
}

func (logBindings) UnregisterTrigger(_ context.Context, cfg iii.TriggerConfig) error {
	log.Printf("unbound %s", cfg.ID)
	return nil
}

// Handlers choose their error code with *InvocationError and read the
// invocation metadata from the context.
func ExampleHandler() {
	c := iii.RegisterWorker(iii.DefaultEngineURL)
	defer c.Close()
	_, _ = c.RegisterFunction("skills::get", func(ctx context.Context, data json.RawMessage) (any, error) {
		var in struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(data, &in); err != nil || in.ID == "" {
			return nil, iii.NewInvocationError("invalid_request", `expected {"id": "<skill id>"}`)
		}
		if md, ok := iii.MetadataFromContext(ctx); ok {
			log.Printf("metadata: %s", md)
		}
		return map[string]string{"id": in.ID}, nil
	})
}
