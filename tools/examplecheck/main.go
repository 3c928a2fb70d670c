// Command examplecheck checks what an example publisher left in the
// registry: every skill under its namespace, every iii:// link those skills
// carry (fetched, so a dead link fails), and its prompt. With --gone it
// checks instead that the namespace and the prompt were unregistered (the
// examples' shutdown behaviour). Used by `make test-dist`.
//
//	examplecheck --url ws://127.0.0.1:PORT --namespace resend-node --prompt send-email-node [--skills 4] [--gone]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// link is an iii:// URI in markdown: up to the closing parenthesis, a
// backtick or white space.
var link = regexp.MustCompile("iii://[^)`\\s]+")

func main() {
	url := flag.String("url", "ws://127.0.0.1:49134", "engine URL")
	ns := flag.String("namespace", "", "skill id namespace of the example (its root id)")
	prompt := flag.String("prompt", "", "prompt name of the example")
	want := flag.Int("skills", 1, "how many skills the namespace holds once registered")
	gone := flag.Bool("gone", false, "check that the namespace and prompt were unregistered")
	wait := flag.Duration("wait", 60*time.Second, "how long to wait for the example")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	c := iii.RegisterWorker(*url, iii.WithName("examplecheck"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		fail("connect %s: %v", *url, err)
	}
	ck := checker{c: c, ns: *ns, prompt: *prompt}
	var err error
	if *gone {
		err = ck.poll(ctx, func() error { return ck.unregistered(ctx) })
	} else {
		err = ck.poll(ctx, func() error { return ck.registered(ctx, *want) })
	}
	if err != nil {
		fail("%s: %v", *ns, err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "examplecheck: "+format+"\n", a...)
	os.Exit(1)
}

type checker struct {
	c          *iii.Client
	ns, prompt string
}

func (k checker) call(ctx context.Context, fn string, payload any, out any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	raw, err := k.c.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// poll retries check until it passes or ctx ends; the last error explains.
func (k checker) poll(ctx context.Context, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (k checker) ids(ctx context.Context) ([]string, error) {
	var list struct {
		Skills []struct{ ID string } `json:"skills"`
	}
	if err := k.call(ctx, rules.FnSkillsList, map[string]any{}, &list); err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range list.Skills {
		if s.ID == k.ns || strings.HasPrefix(s.ID, k.ns+"/") {
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

func (k checker) hasPrompt(ctx context.Context) (bool, error) {
	var list struct {
		Prompts []struct{ Name string } `json:"prompts"`
	}
	if err := k.call(ctx, rules.FnPromptsList, map[string]any{}, &list); err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.Prompts, func(p struct{ Name string }) bool { return p.Name == k.prompt }), nil
}

func (k checker) read(ctx context.Context, uri string) (string, error) {
	var res struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if err := k.call(ctx, rules.FnSkillsResourcesRead, map[string]string{"uri": uri}, &res); err != nil {
		return "", err
	}
	if len(res.Contents) == 0 {
		return "", errors.New("no contents")
	}
	return res.Contents[0].Text, nil
}

// registered: the namespace holds want skills, the prompt is listed, and
// every link of every skill resolves.
func (k checker) registered(ctx context.Context, want int) error {
	ids, err := k.ids(ctx)
	if err != nil {
		return err
	}
	if len(ids) != want {
		return fmt.Errorf("%d skills registered under %s (%v), want %d", len(ids), k.ns, ids, want)
	}
	if ok, err := k.hasPrompt(ctx); err != nil || !ok {
		return fmt.Errorf("prompt %q not listed (err %v)", k.prompt, err)
	}
	links := 0
	for _, id := range ids {
		body, err := k.read(ctx, "iii://"+id)
		if err != nil {
			return fmt.Errorf("read iii://%s: %w", id, err)
		}
		for _, uri := range link.FindAllString(body, -1) {
			if _, err := k.read(ctx, uri); err != nil {
				return fmt.Errorf("dead link %s in iii://%s: %w", uri, id, err)
			}
			links++
		}
	}
	fmt.Printf("%s: %d skills, %d iii:// links, all resolve; prompt /%s listed\n", k.ns, len(ids), links, k.prompt)
	return nil
}

// unregistered: nothing left under the namespace, no prompt.
func (k checker) unregistered(ctx context.Context) error {
	ids, err := k.ids(ctx)
	if err != nil {
		return err
	}
	ok, err := k.hasPrompt(ctx)
	if err != nil {
		return err
	}
	if len(ids) > 0 || ok {
		return fmt.Errorf("after shutdown: skills %v and prompt listed=%v remain", ids, ok)
	}
	fmt.Printf("%s: unregistered on shutdown\n", k.ns)
	return nil
}
