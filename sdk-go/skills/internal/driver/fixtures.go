package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/skills"
)

// The fixtures of conformance/DRIVER.md, written the way a user of this SDK
// writes prompt arguments and typed functions.

type sendEmailArgs struct {
	To      string `json:"to" jsonschema:"description=Recipient address"`
	Subject string `json:"subject" jsonschema:"description=Subject line"`
	Urgent  *bool  `json:"urgent,omitempty" jsonschema:"description=Mark as urgent"`
}

type countWordsArgs struct {
	Limit int `json:"limit" jsonschema:"description=Maximum words"`
}

type echoInput struct {
	Message string `json:"message"`
	Repeat  int    `json:"repeat"`
}

type echoOutput struct {
	Echo string `json:"echo"`
}

func definePrompt(p *skills.Publisher, fixture, name string, opts ...skills.FuncOption) (string, error) {
	switch fixture {
	case "send-email":
		return skills.Prompt(p, name, "Compose and send an email",
			func(_ context.Context, a sendEmailArgs) (skills.PromptResult, error) {
				s := fmt.Sprintf("Compose an email to %s with the subject \"%s\".", a.To, a.Subject)
				if a.Urgent != nil && *a.Urgent {
					s += " Mark it urgent."
				}
				return skills.Content(s), nil
			}, opts...)
	case "count-words":
		return skills.Prompt(p, name, "Answer within a word limit",
			func(_ context.Context, a countWordsArgs) (skills.PromptResult, error) {
				return skills.Text(fmt.Sprintf("Use at most %d words.", a.Limit)), nil
			}, opts...)
	case "dialogue":
		return skills.Prompt(p, name, "A scripted two-turn dialogue",
			func(context.Context, struct{}) (skills.PromptResult, error) {
				return skills.Messages(skills.UserText("hi"), skills.AssistantText("hello")), nil
			}, opts...)
	}
	return "", fmt.Errorf("prompt: unknown fixture %q", fixture)
}

func defineFunction(p *skills.Publisher, fixture, id string) error {
	if fixture != "echo" {
		return fmt.Errorf("function: unknown fixture %q", fixture)
	}
	return skills.Function(p, id, func(_ context.Context, in echoInput) (echoOutput, error) {
		return echoOutput{Echo: strings.Repeat(in.Message, max(0, in.Repeat))}, nil
	}, skills.WithDescription("Echo a message"))
}
