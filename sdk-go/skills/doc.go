// Package skills publishes agent-facing content to the iii skills registry:
// skills (markdown served at iii://{id}), section functions (iii://fn/{path})
// and typed slash-command prompts. It wraps an [iii.Client] the program already
// holds and follows the cross-SDK contract of docs/publishers.md.
//
// # Publishing
//
//	c := iii.RegisterWorker("", iii.WithName("resend")) // $III_URL, else ws://127.0.0.1:49134
//	p := skills.NewPublisher(c)
//
//	p.Skill("resend", "# resend\n\nEmail provider integration.\n\n- [`email`](iii://resend/email)\n")
//	p.Skill("resend/email", "# resend/email\n\nEmail flows.\n")
//
//	uri, _ := p.Section("resend/health", func(ctx context.Context) (any, error) {
//		return skills.Content("# Resend health\n\nAPI: ok."), nil // iii://fn/resend/health
//	})
//
//	type SendEmailArgs struct {
//		To      string `json:"to" jsonschema:"description=Recipient address"`
//		Subject string `json:"subject" jsonschema:"description=Subject line"`
//		Urgent  *bool  `json:"urgent,omitempty" jsonschema:"description=Mark as urgent"`
//	}
//	skills.Prompt(p, "send-email", "Compose and send an email",
//		func(ctx context.Context, a SendEmailArgs) (skills.PromptResult, error) {
//			return skills.Content("Compose an email to " + a.To + "."), nil
//		})
//
//	err := p.Start(ctx) // or <-p.StartBackground(ctx)
//	defer p.Close(context.Background(), false)
//
// [Publisher.Skill] checks ids and bodies locally with the registry's rules
// and returns a [*ValidationError] with the registry's exact message.
// [Publisher.Section] registers the
// function a::b::c behind iii://fn/a/b/c; its handler returns a string,
// [Content](s) or any JSON value. [Prompt] derives the argument list (name,
// description, required) from the Args struct: json names, descriptions from
// `jsonschema:"description=…"` or `jsonschema_description:"…"`, required
// unless the field is a pointer or omitempty. Before the handler runs the
// arguments are checked and MCP's strings converted ("42" → 42, "true" →
// true); problems fail the call with one message such as
//
//	prompt "send-email": missing required argument "to"; argument "count" must be an integer, got "abc"
//
// Prompt handlers return [Text](s), [Content](s) or [Messages]([UserText](…), …).
// [Function] registers any typed function with request/response JSON Schemas.
//
// # Registration and re-registration
//
// [Publisher.Start] registers every skill and prompt in the order added (each call with
// a 5 s timeout) and retries what is missing with capped exponential backoff
// (cenkalti/backoff: 5 s, ×2, capped at 60 s; [WithBackoff] changes it). After
// 180 s it logs, at warning level, exactly
//
//	skills handshake gave up; install / start it and restart this worker
//
// and returns an error matching [ErrGaveUp] that carries the last failure;
// it never panics or exits. A round goes on past an item the registry
// refuses, so one refused id never keeps the others from being registered;
// once a round met refusals, Start returns a [*RegistrationError] listing
// each [*RejectedError] with the registry's code, the [Holder] of an id
// another worker holds (its id and the name the registry's web page shows)
// and advice that fits the code. A validation refusal (INVALID_ARGUMENTS,
// or one of the validation messages from a registry that sends no code) and
// an id outside the namespaces of the publisher's scoped token
// (OUT_OF_SCOPE) are permanent and not retried; an id another worker holds
// (FORBIDDEN) is retried until the deadline, and passes to this publisher
// once that worker is gone. An engine URL that can never connect
// ([iii.EngineURL]) fails Start at once. Whatever Start returns, the
// publisher keeps the registry in step until Close: it registers everything
// again when the client reconnects to the engine ([iii.Client.OnConnect];
// the engine may have restarted empty) and when skills::register reappears
// on the engine trigger type engine::functions-available after having been
// absent. Items added after Start are registered at once.
//
// # Change events
//
// [Publisher.OnSkillChange] and [Publisher.OnPromptChange] subscribe to skills::on-change and
// prompts::on-change and deliver typed [SkillChange]{Op, ID} /
// [PromptChange]{Op, Name} events. The publisher's own functions carry the
// metadata {"internal": true} so tool listings hide them.
//
// # Shutdown
//
// [Publisher.Close](ctx, unregister) stops retrying; with unregister it calls
// skills::unregister / prompts::unregister for everything the registry
// accepted from this publisher; it then unregisters the publisher's functions
// and triggers. The iii client stays open.
package skills
