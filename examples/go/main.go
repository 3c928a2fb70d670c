// Command resend is the upstream registry README's `resend` publisher done in
// Go with github.com/iii-skills/skills/sdk-go/skills: a nested skill tree
// (router `resend-go`, group `resend-go/email`, leaves `resend-go/email/send` and
// `resend-go/email/track`), a live section at iii://fn/resend-go/health and a typed
// /send-email-go prompt.
//
//	make run            # the standalone registry on ws://127.0.0.1:49134
//	make example-go     # this publisher (III_URL overrides the engine)
//
// It logs what it registered and stays up until SIGINT / SIGTERM.
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

//go:embed docs/resend-email-send.md
var sendDoc string

//go:embed docs/resend-email-track.md
var trackDoc string

// SendEmailArgs are the /send-email-go arguments; the argument list clients see
// (name, description, required) is derived from this struct.
type SendEmailArgs struct {
	To      string `json:"to" jsonschema:"description=Recipient address"`
	Subject string `json:"subject" jsonschema:"description=Subject line"`
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	url := os.Getenv("III_URL")
	if url == "" {
		url = iii.DefaultEngineURL
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, url, log); err != nil {
		log.Error("resend example failed", "error", err)
		os.Exit(1)
	}
}

// run publishes everything, then serves until ctx ends.
func run(ctx context.Context, url string, log *slog.Logger) error {
	client := iii.RegisterWorker(url, iii.WithName("resend-example"), iii.WithLogger(log))
	defer client.Close()
	p := skills.NewPublisher(client, skills.WithLogger(log))
	uri, err := publish(p)
	if err != nil {
		return err
	}

	// The engine may not be up yet: the client keeps dialling in the
	// background and the publisher retries with backoff.
	go func() {
		if err := client.Connect(ctx); err != nil && ctx.Err() == nil {
			log.Warn("not connected to the engine yet; retrying in the background", "url", url, "error", err)
		}
	}()
	started := p.StartBackground(ctx)
	select {
	case err := <-started:
		var rejected *skills.RejectedError
		switch {
		case err == nil:
			log.Info("resend example registered",
				"skills", []string{"resend-go", "resend-go/email", "resend-go/email/send", "resend-go/email/track"},
				"section", uri, "prompt", "/send-email-go", "engine", url)
		case errors.Is(err, skills.ErrGaveUp):
			log.Warn("not registered with the skills registry; still serving the section and prompt, and registering again when it appears")
		case errors.As(err, &rejected):
			return err
		}
	case <-ctx.Done():
	}
	<-ctx.Done()
	log.Info("stopping")
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Close(closeCtx, true) // unregister what this example published (docs/examples.md)
}

// publish adds the resend tree, section and prompt to p and returns the
// section URI.
func publish(p *skills.Publisher) (string, error) {
	// 1. Top-level router: small, links into its children.
	// 2. Mid-level group, itself a router.
	// 3. Leaves: the content an agent reads once it drills in.
	tree := []struct{ id, markdown string }{
		{"resend-go", "# resend-go\n\nEmail provider integration.\n\n" +
			"- [`email`](iii://resend-go/email) — sending and tracking\n\n" +
			"Live status check: [`health`](iii://fn/resend-go/health)\n"},
		{"resend-go/email", "# resend-go/email\n\nEmail flows.\n\n" +
			"- [`send`](iii://resend-go/email/send) — outbound\n" +
			"- [`track`](iii://resend-go/email/track) — webhooks + status\n"},
		{"resend-go/email/send", sendDoc},
		{"resend-go/email/track", trackDoc},
	}
	for _, s := range tree {
		if err := p.Skill(s.id, s.markdown); err != nil {
			return "", err
		}
	}

	// 4. A section: iii://fn/resend-go/health calls resend-go::health.
	startedAt := time.Now()
	var checks atomic.Int64
	uri, err := p.Section("resend-go/health", func(context.Context) (any, error) {
		n := checks.Add(1)
		return skills.Content(fmt.Sprintf("# Resend health\n\nAPI: ok. Worker up %s; this is health check #%d, served at %s.",
			time.Since(startedAt).Round(time.Second), n, time.Now().UTC().Format(time.RFC3339))), nil
	}, skills.WithDescription("Live operational health for the resend integration."))
	if err != nil {
		return "", err
	}

	// 5. A slash-command with typed arguments, checked before the handler runs.
	_, err = skills.Prompt(p, "send-email-go", "Compose and send an email",
		func(_ context.Context, a SendEmailArgs) (skills.PromptResult, error) {
			return skills.Content(fmt.Sprintf("Compose an email to %s with the subject %q. Be concise and friendly.", a.To, a.Subject)), nil
		}, skills.WithFunctionID("resend-go::send_email_prompt"))
	return uri, err
}
