package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/skills"
)

func ExampleArgumentsOf() {
	type SendEmailArgs struct {
		To      string `json:"to" jsonschema:"description=Recipient address"`
		Subject string `json:"subject" jsonschema_description:"Subject line"`
		Urgent  *bool  `json:"urgent,omitempty" jsonschema:"description=Mark as urgent"`
	}
	args, _ := skills.ArgumentsOf[SendEmailArgs]()
	b, _ := json.Marshal(args)
	fmt.Println(string(b))
	// Output: [{"name":"to","description":"Recipient address","required":true},{"name":"subject","description":"Subject line","required":true},{"name":"urgent","description":"Mark as urgent","required":false}]
}

func ExampleValidateSkillID() {
	fmt.Println(skills.ValidateSkillID("resend/email/send"))
	fmt.Println(skills.ValidateSkillID("fn/resend"))
	fmt.Println(skills.ValidateSkillID("Resend"))
	// Output:
	// <nil>
	// id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/resend"
	// invalid id (segment 1 of "Resend"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Resend"
}

func ExampleSectionFunctionID() {
	fid, _ := skills.SectionFunctionID("resend/health")
	fmt.Println(fid)
	_, err := skills.SectionFunctionID("state/set")
	fmt.Println(err)
	// Output:
	// resend::health
	// Function 'state::set' is in an internal namespace and cannot back a skill resource
}

func ExampleMessages() {
	b, _ := json.Marshal(skills.Messages(skills.UserText("hi"), skills.AssistantText("hello")))
	fmt.Println(string(b))
	b, _ = json.Marshal(skills.Content("Compose an email."))
	fmt.Println(string(b))
	// Output:
	// {"messages":[{"role":"user","content":{"type":"text","text":"hi"}},{"role":"assistant","content":{"type":"text","text":"hello"}}]}
	// {"content":"Compose an email."}
}

// A publisher that never blocks boot: registration runs in the background
// and its outcome is only logged. (It needs a running engine, so it is
// compiled, not run.)
func ExamplePublisher_StartBackground() {
	ctx := context.Background()
	client := iii.RegisterWorker("", iii.WithName("resend")) // $III_URL, else ws://127.0.0.1:49134
	defer client.Close()
	p := skills.NewPublisher(client)
	if err := p.Skill("resend", "# resend\n\nEmail provider integration.\n"); err != nil {
		log.Fatal(err) // a *ValidationError with the registry's own message
	}
	go func() {
		if err := client.Connect(ctx); err != nil {
			log.Print(err)
		}
	}()
	registered := p.StartBackground(ctx)
	go func() {
		// nil once everything is registered; an error matching ErrGaveUp
		// or a *RegistrationError (each refusal with its advice)
		// otherwise. The publisher keeps registering again after
		// reconnects either way.
		if err := <-registered; err != nil {
			log.Printf("skills not registered yet: %v", err)
		}
	}()
	// ... the worker's own boot goes on here ...
	defer p.Close(ctx, false)
}
