package main

// Scoped engine tokens on the Skills Protocol
// and directory write functions, over real sockets against the skills
// binary: a team token publishes bundles only under its namespaces, cannot
// get around that by queueing the call, and cannot download into the
// operator's folder; the operator's bundles survive, and a full-access
// client is unaffected.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

const (
	scopeOperatorToken = "operator-token-0123456789"
	scopeAcmeToken     = "acme-token-0123456789"
)

// connectWithToken is an engine connection presenting token.
func connectWithToken(t *testing.T, url, name, token string) *iii.Client {
	t.Helper()
	c := iii.New(url, iii.WithName(name), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		iii.WithHeaders(http.Header{"Authorization": {"Bearer " + token}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantForbidden fails unless err is a FORBIDDEN refusal (a call a scoped
// token may never make) holding every part of want.
func wantForbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	wantRefusal(t, "FORBIDDEN", what, err, want...)
}

// wantOutOfScope fails unless err is an OUT_OF_SCOPE refusal (an id
// outside the token's namespaces) holding every part of want.
func wantOutOfScope(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	wantRefusal(t, "OUT_OF_SCOPE", what, err, want...)
}

func wantRefusal(t *testing.T, code, what string, err error, want ...string) {
	t.Helper()
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != code {
		t.Fatalf("%s: %v; want a %s refusal", what, err, code)
	}
	for _, w := range want {
		if !strings.Contains(ie.Message, w) {
			t.Fatalf("%s: %q does not say %q", what, ie.Message, w)
		}
	}
}

func TestAttackScopedTokenPublishesBundlesOnlyInItsNamespaces(t *testing.T) {
	skills := t.TempDir()
	writeBundle(t, filepath.Join(skills, "ledger"), bundleFiles("billing.ledger", "1.0.0", "operator-ledger"))
	s := startSPServer(t, "engine_tokens:\n  - name: acme\n    token: "+scopeAcmeToken+"\n    namespaces: [acme, labs]\n",
		"--engine-token", scopeOperatorToken, "--skills-folder", skills)
	operator := connectWithToken(t, s.url, "operator", scopeOperatorToken)
	acme := connectWithToken(t, s.url, "acme", scopeAcmeToken)

	// The team publishes under its namespaces ("acme" itself, "acme.…",
	// "labs.…").
	for _, name := range []string{"acme", "acme.crm.sync", "labs.probe"} {
		if _, err := publishFiles(t, acme, bundleFiles(name, "1.0.0", "acme")); err != nil {
			t.Fatalf("acme publishing %s: %v", name, err)
		}
	}
	// A full-access client publishes anywhere, as without scoped tokens.
	if _, err := publishFiles(t, operator, bundleFiles("billing.pay.charge", "1.0.0", "operator")); err != nil {
		t.Fatalf("the operator publishing billing.pay.charge: %v", err)
	}

	// Outside its namespaces the team is refused, before anything else is
	// said about the name: a copy of another team's version is not
	// "unchanged", a name served from a folder is not "served from a folder".
	same := bundleFiles("billing.pay.charge", "1.0.0", "operator")
	for what, files := range map[string]map[string]string{
		"another team's name, new version":  bundleFiles("billing.pay.charge", "2.0.0", "attacker"),
		"another team's version, same copy": same,
		"a name served from a folder":       bundleFiles("billing.ledger", "9.0.0", "attacker"),
		"a name sharing the prefix only":    bundleFiles("acmecorp.tool", "1.0.0", "attacker"),
		"a name under the namespace's dot":  bundleFiles("billing.acme", "1.0.0", "attacker"),
	} {
		_, err := publishFiles(t, acme, files)
		name := strings.Split(strings.Split(files["skill.toml"], `"`)[1], `"`)[0]
		wantOutOfScope(t, "acme publishing "+what, err, "forbidden: bundle "+name, "(iii id "+skillsprotocol.NameToID(name)+")",
			`outside the namespaces of token "acme" (acme, labs)`)
	}

	// Queueing the call does not shed the scope: the job runs as acme's.
	data, _ := json.Marshal(skillsprotocol.PublishRequest{Files: encodeFiles(bundleFiles("billing.pay.queued", "1.0.0", "attacker"))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := acme.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnPublishBundle, Data: data,
		Action: iii.EnqueueAction("scope-test")}); err != nil {
		t.Fatalf("acme enqueueing a publish: %v", err)
	}
	waitFor(t, s.logs, "queued job failed")
	if !strings.Contains(s.logs.String(), "billing.pay.queued (iii id billing/pay/queued) is outside the namespaces") {
		t.Fatalf("the queued publish did not fail for its namespace:\n%s", s.logs.String())
	}

	// A download writes into the operator's folder: refused to a scoped
	// token whatever it names, allowed to get as far as its own checks for
	// the operator.
	_, err := trigger(t, acme, "directory::skills::download", map[string]any{"worker": "acme"})
	wantForbidden(t, "acme downloading", err, `token "acme" (scoped to acme, labs) cannot call directory::skills::download`)
	if _, err := trigger(t, operator, "directory::skills::download", map[string]any{"worker": "acme"}); err == nil ||
		strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("the operator downloading from an unconfigured registry: %v; want the download's own error", err)
	}
	if entries, err := os.ReadDir(skills); err != nil || len(entries) != 1 {
		t.Fatalf("the skills folder after the downloads: %v %v", entries, err)
	}

	// Nothing stored was lost or replaced, across a restart.
	s.restart()
	for name, marker := range map[string]string{"billing.pay.charge": "operator", "billing.ledger": "operator-ledger", "acme.crm.sync": "acme", "acme": "acme"} {
		if r := executeBundle(t, s.rpcURL, name); r.Output.Marker != marker {
			t.Fatalf("execute_skill %s after the attack: %+v; want marker %q", name, r.Output, marker)
		}
	}
	for _, name := range []string{"billing.pay.queued", "acmecorp.tool", "billing.acme"} {
		if status, resp := rpcCall(t, s.rpcURL, "describe_skill", map[string]any{"name": name}); status != http.StatusOK || resp["error"] == nil {
			t.Fatalf("refused bundle %s is served: %s", name, resp["result"])
		}
	}
	if status, resp := rpcCall(t, s.rpcURL, "describe_skill", map[string]any{"name": "billing.pay.charge"}); status != http.StatusOK ||
		!strings.Contains(string(resp["result"]), `"1.0.0"`) || strings.Contains(string(resp["result"]), `"2.0.0"`) {
		t.Fatalf("billing.pay.charge after the attack: %s %s", resp["result"], resp["error"])
	}
}

func encodeFiles(files map[string]string) []skillsprotocol.BundleFile {
	var list []skillsprotocol.BundleFile
	for p, content := range files {
		list = append(list, skillsprotocol.BundleFile{Path: p, Content: base64.StdEncoding.EncodeToString([]byte(content)), Encoding: "base64"})
	}
	return list
}

// skills::label and skills::rollback (and the prompt ones) change what an
// id serves, as a register does: a team token may use them only in its
// namespaces, and another team's served version is kept.
func TestAttackScopedTokenCannotRollBackOrRelabelOtherTeams(t *testing.T) {
	s := startSPServer(t, "engine_tokens:\n  - name: acme\n    token: "+scopeAcmeToken+"\n    namespaces: [acme]\n",
		"--engine-token", scopeOperatorToken)
	operator := connectWithToken(t, s.url, "operator", scopeOperatorToken)
	acme := connectWithToken(t, s.url, "acme", scopeAcmeToken)
	register := func(c *iii.Client, fn string, payload map[string]any) {
		t.Helper()
		if _, err := trigger(t, c, fn, payload); err != nil {
			t.Fatalf("%s %v: %v", fn, payload, err)
		}
	}
	for _, body := range []string{"# billing v1", "# billing v2"} {
		register(operator, "skills::register", map[string]any{"id": "billing/x", "skill": body})
		register(acme, "skills::register", map[string]any{"id": "acme/x", "skill": strings.Replace(body, "billing", "acme", 1)})
	}
	for _, desc := range []string{"billing v1", "billing v2"} {
		register(operator, "prompts::register", map[string]any{"name": "billing-review", "description": desc, "function_id": "billing::review"})
	}

	for _, c := range []struct {
		fn      string
		payload map[string]any
		want    string
	}{
		{"skills::rollback", map[string]any{"id": "billing/x", "version": 1}, `skill "billing/x"`},
		{"skills::label", map[string]any{"id": "billing/x", "label": "production", "version": 1}, `skill "billing/x"`},
		{"prompts::rollback", map[string]any{"name": "billing-review", "version": 1}, `prompt "billing-review"`},
		{"prompts::label", map[string]any{"name": "billing-review", "label": "production", "version": 1}, `prompt "billing-review"`},
	} {
		_, err := trigger(t, acme, c.fn, c.payload)
		wantOutOfScope(t, "acme calling "+c.fn, err, "forbidden: "+c.want+` is outside the namespaces of token "acme" (acme)`)
	}
	// In its own namespace the team rolls back and labels as before.
	register(acme, "skills::rollback", map[string]any{"id": "acme/x", "version": 1})
	register(acme, "skills::label", map[string]any{"id": "acme/x", "label": "production", "version": 1})

	// billing's newest version is still the one served, and no rollback
	// version was added.
	out, err := trigger(t, operator, "skills::versions", map[string]any{"id": "billing/x"})
	if err != nil || strings.Contains(string(out), "rollback") || !strings.Contains(string(out), `"version":2`) || strings.Contains(string(out), `"version":3`) {
		t.Fatalf("billing/x versions after the attack: %s %v", out, err)
	}
	body, err := trigger(t, operator, "skill::fetch", map[string]any{"uri": "iii://billing/x"})
	if err != nil || !strings.Contains(string(body), "billing v2") {
		t.Fatalf("billing/x served after the attack: %s %v", body, err)
	}
}

// Team acme's token must not reach team acme-corp's ids: skills split at
// '/' only, and a prompt name belongs to the longest namespace that
// covers it (acme-corp-review is acme-corp's, not acme's, though prompt
// names split at '-').
func TestAttackScopedTokenCannotReachANamespaceThatExtendsItsOwn(t *testing.T) {
	const corpToken = "acme-corp-token-0123456789"
	s := startSPServer(t, "engine_tokens:\n  - name: acme\n    token: "+scopeAcmeToken+"\n    namespaces: [acme]\n"+
		"  - name: acme-corp\n    token: "+corpToken+"\n    namespaces: [acme-corp]\n", "--engine-token", scopeOperatorToken)
	acme := connectWithToken(t, s.url, "acme", scopeAcmeToken)
	corp := connectWithToken(t, s.url, "acme-corp", corpToken)
	register := func(c *iii.Client, fn string, payload map[string]any) {
		t.Helper()
		if _, err := trigger(t, c, fn, payload); err != nil {
			t.Fatalf("%s %v: %v", fn, payload, err)
		}
	}

	// acme takes acme-corp's names first: refused, whether the other team
	// has published them yet or not.
	for _, c := range []struct {
		fn      string
		payload map[string]any
		want    string
	}{
		{"skills::register", map[string]any{"id": "acme-corp/notes", "skill": "# attacker"}, `skill "acme-corp/notes"`},
		{"prompts::register", map[string]any{"name": "acme-corp-review", "description": "attacker", "function_id": "acme::review"}, `prompt "acme-corp-review"`},
		{"prompts::register", map[string]any{"name": "acme-corp_triage", "description": "attacker", "function_id": "acme::review"}, `prompt "acme-corp_triage"`},
		{"prompts::register", map[string]any{"name": "acme-review", "description": "attacker", "function_id": "prompt::acme-corp-review"}, `function "prompt::acme-corp-review"`},
	} {
		_, err := trigger(t, acme, c.fn, c.payload)
		wantOutOfScope(t, "acme calling "+c.fn, err, "forbidden: "+c.want+` is outside the namespaces of token "acme" (acme)`)
	}
	// Its own prompt names with '-' still belong to it.
	register(acme, "prompts::register", map[string]any{"name": "acme-review", "description": "acme's", "function_id": "acme::review"})

	// acme-corp publishes its own; acme can neither replace, remove, roll
	// back nor relabel them.
	for _, desc := range []string{"corp v1", "corp v2"} {
		register(corp, "prompts::register", map[string]any{"name": "acme-corp-review", "description": desc, "function_id": "acme-corp::review"})
		register(corp, "skills::register", map[string]any{"id": "acme-corp/notes", "skill": "# " + desc})
	}
	for _, c := range []struct {
		fn      string
		payload map[string]any
		want    string
	}{
		{"prompts::register", map[string]any{"name": "acme-corp-review", "description": "attacker", "function_id": "acme::review"}, `prompt "acme-corp-review"`},
		{"prompts::unregister", map[string]any{"name": "acme-corp-review"}, `prompt "acme-corp-review"`},
		{"prompts::rollback", map[string]any{"name": "acme-corp-review", "version": 1}, `prompt "acme-corp-review"`},
		{"prompts::label", map[string]any{"name": "acme-corp-review", "label": "production", "version": 1}, `prompt "acme-corp-review"`},
		{"skills::unregister", map[string]any{"id": "acme-corp/notes"}, `skill "acme-corp/notes"`},
		{"skills::rollback", map[string]any{"id": "acme-corp/notes", "version": 1}, `skill "acme-corp/notes"`},
	} {
		_, err := trigger(t, acme, c.fn, c.payload)
		wantOutOfScope(t, "acme calling "+c.fn+" on acme-corp's id", err, "forbidden: "+c.want+` is outside the namespaces of token "acme" (acme)`)
	}
	out, err := trigger(t, corp, "prompts::list", map[string]any{})
	if err != nil || !strings.Contains(string(out), `"function_id":"acme-corp::review","name":"acme-corp-review"`) || strings.Count(string(out), `"name"`) != 2 {
		t.Fatalf("prompts after the attack: %s %v", out, err)
	}
	body, err := trigger(t, corp, "skill::fetch", map[string]any{"uri": "iii://acme-corp/notes"})
	if err != nil || !strings.Contains(string(body), "corp v2") {
		t.Fatalf("acme-corp/notes after the attack: %s %v", body, err)
	}
}
