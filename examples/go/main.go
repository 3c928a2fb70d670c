// Command resend is the upstream registry README's `resend` publisher done in
// Go with github.com/iii-skills/skills/sdk-go/skills: a nested skill tree
// (router `resend-go`, group `resend-go/email`, leaves `resend-go/email/send`
// and `resend-go/email/track`), a live section at iii://fn/resend-go/health
// and a typed /send-email-go prompt. Each example publishes under its own
// namespace (resend-go, resend-node, resend-python), so they can run side by
// side.
//
//	make run            # the standalone registry on ws://127.0.0.1:49134
//	make example-go     # this publisher (III_URL overrides the engine)
//
// It logs what it registered and stays up until SIGINT / SIGTERM, then
// unregisters what it published (docs/coming-from-upstream.md#the-examples).
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/skills"
)

var (
	//go:embed docs/resend-email-send.md
	sendDoc string
	//go:embed docs/resend-email-track.md
	trackDoc string
)

// SendEmailArgs are the /send-email arguments; the argument list clients see
// (name, description, required) is derived from this struct.
type SendEmailArgs struct {
	To      string `json:"to" jsonschema:"description=Recipient address"`
	Subject string `json:"subject" jsonschema:"description=Subject line"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url, err := iii.EngineURL("") // III_URL, else ws://127.0.0.1:49134; a malformed one fails here
	if err == nil {
		err = run(ctx, url, slog.Default())
	}
	if err != nil {
		slog.Error("resend example failed", "error", err)
		os.Exit(1)
	}
}

// run publishes everything, then serves until ctx ends. The engine may not be
// up yet: the client dials in the background and the publisher retries.
func run(ctx context.Context, url string, log *slog.Logger) error {
	client := iii.RegisterWorker(url, iii.WithName("resend-example"), iii.WithLogger(log))
	defer client.Close()
	p := skills.NewPublisher(client, skills.WithLogger(log))

	err := errors.Join(
		// 1. Top-level router: a small body that links to its children.
		p.Skill("resend-go", "# resend-go\n\nEmail provider integration.\n\n"+
			"- [`email`](iii://resend-go/email) — sending and tracking\n\n"+
			"Live status check: [`health`](iii://fn/resend-go/health)\n"),
		// 2. Mid-level group, itself a router into its own children.
		p.Skill("resend-go/email", "# resend-go/email\n\nEmail flows.\n\n"+
			"- [`send`](iii://resend-go/email/send) — outbound\n"+
			"- [`track`](iii://resend-go/email/track) — webhooks + status\n"),
		// 3. The leaves the agent reads once it decides to drill in.
		p.Skill("resend-go/email/send", sendDoc),
		p.Skill("resend-go/email/track", trackDoc),
	)

	// 4. A section: iii://fn/resend-go/health calls resend-go::health and serves its output.
	startedAt := time.Now()
	var checks atomic.Int64
	uri, serr := p.Section("resend-go/health", func(context.Context) (any, error) {
		return skills.Content(fmt.Sprintf("# Resend health\n\nAPI: ok. Worker up %s; this is health check #%d, served at %s.",
			time.Since(startedAt).Round(time.Second), checks.Add(1), time.Now().UTC().Format(time.RFC3339))), nil
	}, skills.WithDescription("Live operational health for the resend integration."))

	// 5. A slash-command with typed arguments, checked before the handler runs.
	_, perr := skills.Prompt(p, "send-email-go", "Compose and send an email",
		func(_ context.Context, a SendEmailArgs) (skills.PromptResult, error) {
			return skills.Content(fmt.Sprintf("Compose an email to %s with the subject %q. Be concise and friendly.", a.To, a.Subject)), nil
		}, skills.WithFunctionID("resend-go::send_email_prompt"))
	if err := errors.Join(err, serr, perr); err != nil {
		return err
	}

	switch err := p.Start(ctx); {
	case errors.Is(err, skills.ErrGaveUp) || err != nil && ctx.Err() != nil:
		log.Warn("resend example: not registered with the skills registry; still serving the section and prompt", "error", err)
	case err != nil:
		// Refusals (each with its code, holder and advice) or an engine URL
		// that can never connect: say so and stop.
		return err
	default:
		log.Info("resend example registered",
			"skills", []string{"resend-go", "resend-go/email", "resend-go/email/send", "resend-go/email/track"},
			"section", uri, "prompt", "/send-email-go", "engine", url)
	}
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Unregister what this example published (docs/coming-from-upstream.md#the-examples).
	return p.Close(closeCtx, true)
}
