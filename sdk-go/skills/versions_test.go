package skills_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/skills"
)

// Message and author reach the registry's history, and labels move.
func TestPublisherVersionsAndLabels(t *testing.T) {
	srv := startServer(t, freePort(t), t.TempDir())
	p := skills.NewPublisher(dial(t, srv.url), skills.WithLogger(quietLogger))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Skill("versioned", "# V1\n", skills.WithMessage("first cut"), skills.WithAuthor("go-sdk")); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Prompt(p, "vp", "Versioned prompt", func(context.Context, struct{}) (skills.PromptResult, error) {
		return skills.Content("x"), nil
	}, skills.WithMessage("prompt v1")); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Adding the id again after Start registers at once: a second version.
	if err := p.Skill("versioned", "# V2\n", skills.WithMessage("second cut")); err != nil {
		t.Fatal(err)
	}
	var h skills.History
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if h, err = p.SkillVersions(ctx, "versioned"); err == nil && h.Latest == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second version not recorded: %+v %v", h, err)
		}
	}
	if h.Versions[0].Message != "second cut" || h.Versions[1].Message != "first cut" || h.Versions[1].Author != "go-sdk" {
		t.Fatalf("history %+v", h)
	}
	m, err := p.LabelSkill(ctx, "versioned", "production", "1", "")
	if err != nil || m.Version != 1 || m.Label != "production" {
		t.Fatalf("label: %+v %v", m, err)
	}
	if m, err = p.LabelSkill(ctx, "versioned", "staging", "production", ""); err != nil || m.Version != 1 {
		t.Fatalf("label by label: %+v %v", m, err)
	}
	if _, err := p.LabelSkill(ctx, "versioned", "latest", "1", ""); err == nil {
		t.Fatal("moving latest by hand was accepted")
	}
	// The registry's NOT_FOUND: an unknown version or id, not a bad request.
	if _, err := p.LabelSkill(ctx, "versioned", "canary", "9", ""); !skills.IsNotFound(err) {
		t.Fatalf("label of a version that does not exist: %v, want IsNotFound", err)
	}
	if _, err := p.SkillVersions(ctx, "never-published"); !skills.IsNotFound(err) {
		t.Fatalf("versions of an unknown skill: %v, want IsNotFound", err)
	}
	if _, err := p.LabelSkill(ctx, "versioned", "latest", "1", ""); skills.IsNotFound(err) {
		t.Fatalf("a refused label move reads as not found: %v", err)
	}
	ph, err := p.PromptVersions(ctx, "vp")
	if err != nil || ph.Latest != 1 || ph.Versions[0].Message != "prompt v1" {
		t.Fatalf("prompt history %+v %v", ph, err)
	}
	if m, err := p.LabelPrompt(ctx, "vp", "stable", "latest", ""); err != nil || m.Version != 1 {
		t.Fatalf("prompt label: %+v %v", m, err)
	}
}

// IsNotFound decides by the code; the text counts only under the generic
// code an upstream registry answers with.
func TestIsNotFound(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{iii.NewInvocationError(rules.CodeNotFound, "skill a has no version 9 (kept: 1-2)"), true},
		{iii.NewInvocationError(iii.CodeInvocationFailed, "Skill not found: a/b"), true},
		{fmt.Errorf("read: %w", iii.NewInvocationError(iii.CodeInvocationFailed, "Prompt not found: p")), true},
		{iii.NewInvocationError(rules.CodeInvalidArguments, "Skill not found: a/b"), false},
		{iii.NewInvocationError(iii.CodeInvocationFailed, "state::get: invocation timed out"), false},
		{iii.NewInvocationError(iii.CodeFunctionNotFound, "Function skills::versions not found"), false},
		{errors.New("Skill not found: a/b"), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := skills.IsNotFound(c.err); got != c.want {
			t.Errorf("IsNotFound(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
