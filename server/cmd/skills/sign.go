package main

// skills sign and skills verify: the publisher's and the reader's side of
// signed versions (docs/trust.md). sign prints the SSH signature of a skill
// body or of a prompt definition's canonical JSON, made with a key file (or
// the ssh-agent holding it); verify fetches a version and its signature
// from the registry and checks them against the reader's own
// allowed_signers, so a reader need not trust the registry's verdict.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
)

func init() {
	subcommands = append(subcommands, subcommand{"sign", func(args []string, stdout, stderr io.Writer) int {
		return runSign(args, os.Stdin, stdout, stderr)
	}}, subcommand{"verify", runVerify})
}

// maxSignInput caps what skills sign reads: a skill body is at most
// 256 KiB and a prompt definition smaller; more is surely the wrong file.
const maxSignInput = 4 << 20

const signUsage = `Usage: skills sign --key FILE [--prompt] [FILE|-]

Prints the SSH signature (armored SSHSIG, namespace ` + rules.SignatureNamespace + `) of a skill's
body, the exact bytes of FILE (or stdin), as ssh-keygen -Y sign -n ` + rules.SignatureNamespace + `
would. With --prompt, FILE is a prompt definition (the ` + rules.FnPromptsRegister + `
payload: {"description", "function_id", "arguments": [{"name", "description",
"required"}]}) and the signature covers its canonical JSON. Send it as
"signature" with ` + rules.FnSkillsRegister + ` / ` + rules.FnPromptsRegister + ` (skills trigger), or
give skills add --sign-key to sign as it registers.

The key is a private key file as ssh-keygen writes it; an encrypted one signs
through the ssh-agent at $SSH_AUTH_SOCK when the agent holds it (ssh-add).
A .pub file signs through the agent too. Exit 0: signed; 1: the key or the
input cannot be used; 2: usage.

Flags:
`

// runSign is `skills sign`.
func runSign(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills sign", flag.ContinueOnError)
	key := fs.String("key", "", "Private key file (as ssh-keygen writes it), or a .pub file whose key the ssh-agent holds")
	prompt := fs.Bool("prompt", false, "Sign a prompt definition's canonical JSON instead of a skill body")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), signUsage)
		fs.PrintDefaults()
	}
	pos, rc := interleaved(fs, args, stdout, stderr)
	if rc >= 0 {
		return rc
	}
	if *key == "" {
		fmt.Fprintln(stderr, "skills sign: --key FILE is required: the private key to sign with (skills sign --help)")
		return 2
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "skills sign: expected at most one FILE (or - for stdin), got %d (skills sign --help)\n", len(pos))
		return 2
	}
	name := "-"
	if len(pos) == 1 {
		name = pos[0]
	}
	data, err := readInput(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "skills sign: %v\n", err)
		return 1
	}
	content := data
	if *prompt {
		def, err := promptDefinition(data)
		if err != nil {
			fmt.Fprintf(stderr, "skills sign: %s: %v\n", shownName(name), err)
			return 1
		}
		content = []byte(def)
	} else if !utf8.Valid(data) {
		fmt.Fprintf(stderr, "skills sign: %s is not UTF-8 text: a skill body is, and the signature covers its exact bytes\n", shownName(name))
		return 1
	}
	signer, err := loadCLISigner(*key)
	if err != nil {
		fmt.Fprintf(stderr, "skills sign: %v\n", err)
		return 1
	}
	armored, err := sshsig.Sign(signer, content, rules.SignatureNamespace)
	if err != nil {
		fmt.Fprintf(stderr, "skills sign: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(armored)
	return 0
}

// interleaved parses flags and positional arguments in any order.
func interleaved(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int) {
	var pos []string
	for {
		if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
			return nil, code
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, -1
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func shownName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// readInput reads FILE, or stdin for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSignInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shownName(name), err)
	}
	if len(data) > maxSignInput {
		return nil, fmt.Errorf("%s is larger than %d bytes: expected a skill body or a prompt definition", shownName(name), maxSignInput)
	}
	return data, nil
}

// promptDefinition reads a prompt definition (a prompts::register payload)
// and returns its canonical JSON.
func promptDefinition(data []byte) (string, error) {
	const want = `expected a prompt definition {"description": "…", "function_id": "…", "arguments": [{"name": "…", "description": "…", "required": true}]}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return "", fmt.Errorf("not a JSON object (%v); %s", errOrNull(err), want)
	}
	for k := range raw {
		switch k {
		case "description", "function_id", "arguments", "name", "message", "author", "signature":
		default:
			return "", fmt.Errorf("unknown field %q; %s", k, want)
		}
	}
	var def struct {
		Description *string                   `json:"description"`
		FunctionID  *string                   `json:"function_id"`
		Arguments   []registry.PromptArgument `json:"arguments"`
	}
	if err := json.Unmarshal(data, &def); err != nil {
		return "", fmt.Errorf("%v; %s", err, want)
	}
	if def.Description == nil || def.FunctionID == nil {
		return "", fmt.Errorf("description and function_id are required; %s", want)
	}
	args := make([]rules.PromptArg, len(def.Arguments))
	for i, a := range def.Arguments {
		if a.Name == "" {
			return "", fmt.Errorf("argument %d has no name; %s", i+1, want)
		}
		args[i] = rules.PromptArg{Name: a.Name, Description: a.Description, Required: a.Required}
	}
	return string(rules.CanonicalPrompt(*def.Description, *def.FunctionID, args)), nil
}

func errOrNull(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// loadCLISigner loads a signing key the way ssh-keygen -Y sign -f does,
// with the ssh-agent at $SSH_AUTH_SOCK for encrypted keys and .pub files,
// and says what to do when it cannot.
func loadCLISigner(path string) (ssh.Signer, error) {
	s, err := sshsig.LoadSigner(path, nil, os.Getenv("SSH_AUTH_SOCK"))
	if errors.Is(err, sshsig.ErrPassphraseRequired) {
		return nil, fmt.Errorf("%v: add it to your ssh-agent (ssh-add %s) and run again, or sign with ssh-keygen -Y sign -n %s -f %s FILE, which asks for the passphrase", err, path, rules.SignatureNamespace, path)
	}
	return s, err
}

const verifyUsage = `Usage: skills verify [--url URL] --allowed-signers FILE [--principal NAME] [--prompt] ID[@VERSION]

Fetches a version of a skill (or prompt) and its signature from the registry
and checks them on this side, against FILE (the allowed_signers format of
ssh-keygen -Y verify and git's gpg.ssh.allowedSignersFile, namespace
` + rules.SignatureNamespace + `), so the registry's own verdict need not be trusted. VERSION is a
number, a label or sha256:<hex>; without it, the version reads serve (for a
prompt, the newest one not yanked). The content is checked against the
version's sha256 too.

Prints the principal and the key's fingerprint. Exit 0: verified; 1: not
verified (unsigned, untrusted, bad signature), or the registry does not have
it; 2: usage, or FILE cannot be read.

Flags:
`

// verifyResult is the result of skills verify (--json).
type verifyResult struct {
	Verified  bool   `json:"verified"`
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	Version   int    `json:"version,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Principal string `json:"principal,omitempty"`
	Key       string `json:"key,omitempty"`
	// Problem is "unsigned", "untrusted" or "bad" when not verified.
	Problem string `json:"problem,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Registry is what the registry says about the signer (null: unsigned
	// or untrusted there).
	Registry *string `json:"registry_signed_by"`
}

// runVerify is `skills verify`.
func runVerify(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("verify", "", stdout, stderr)
	allowed := c.fs.String("allowed-signers", "", "The reader's allowed_signers file: the keys trusted to sign registry content")
	principal := c.fs.String("principal", "", "Require this signer (as ssh-keygen -Y verify -I); default: any principal the file trusts for the key")
	c.fs.Lookup("json").Usage = "Print the result as a JSON object (verified, version, sha256, principal, key, problem, detail, registry_signed_by)"
	c.fs.Usage = func() {
		fmt.Fprint(c.fs.Output(), verifyUsage)
		c.fs.PrintDefaults()
	}
	pos, rc := c.parse(args, 1)
	if rc >= 0 {
		return rc
	}
	if *allowed == "" {
		fmt.Fprintln(stderr, "skills verify: --allowed-signers FILE is required: the keys you trust (skills verify --help)")
		return 2
	}
	signers, err := sshsig.ReadAllowedSigners(*allowed)
	if err != nil {
		fmt.Fprintf(stderr, "skills verify: %v\n", err)
		return 2
	}
	kind := core.KindSkill
	if *c.prompt {
		kind = core.KindPrompt
	}
	id, selector, _ := strings.Cut(pos[0], "@")
	if err := checkVerifyTarget(kind, id, selector); err != nil {
		fmt.Fprintf(stderr, "skills verify: %v\n", err)
		return 2
	}
	if err := probeEngine(*c.url); err != nil {
		fmt.Fprintf(stderr, "skills verify: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *c.wait)
	defer cancel()
	client := iii.RegisterWorker(*c.url, iii.WithName("skills-verify"), iii.WithAnonymous(),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(*c.token))
	defer client.Close()
	if err := client.Connect(ctx); err != nil {
		fmt.Fprintf(stderr, "skills verify: cannot reach the iii engine at %s: %v\n", *c.url, err)
		return 1
	}
	call := func(fn string, payload any) (json.RawMessage, error) {
		body, _ := json.Marshal(payload)
		out, err := client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: body, Timeout: *c.wait})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		return out, nil
	}
	v, content, err := fetchVersion(call, kind, id, selector)
	if err != nil {
		fmt.Fprintf(stderr, "skills verify: %v\n", err)
		return 1
	}
	res := checkVersion(signers, *principal, *allowed, kind, id, v, content, time.Now())
	if *c.asJSON {
		out, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(stdout, string(out))
	} else {
		printVerify(stdout, stderr, res)
	}
	if !res.Verified {
		return 1
	}
	return 0
}

// checkVerifyTarget checks ID and the selector before any network call.
func checkVerifyTarget(kind core.Kind, id, selector string) error {
	var err error
	if kind == core.KindPrompt {
		err = registry.ValidateName(id)
	} else {
		err = registry.ValidateID(id)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %v", kind, id, err)
	}
	if selector != "" {
		if err := registry.CheckSelector(selector); err != nil {
			return err
		}
	}
	return nil
}

// fetchVersion asks the registry for id's versions, picks the one selector
// names (or the served one), and reads its content: a skill's body through
// a pinned read (iii://id@N), a prompt's definition from its version.
func fetchVersion(call func(string, any) (json.RawMessage, error), kind core.Kind, id, selector string) (history.Version, string, error) {
	key := "id"
	if kind == core.KindPrompt {
		key = "name"
	}
	raw, err := call(kind.Function("versions"), map[string]any{key: id})
	if err != nil {
		return history.Version{}, "", err
	}
	var l history.Listing
	if err := json.Unmarshal(raw, &l); err != nil {
		return history.Version{}, "", fmt.Errorf("%s answered %s: %v", kind.Function("versions"), clip(string(raw), 200), err)
	}
	n, err := pickVersion(call, kind, id, selector, l)
	if err != nil {
		return history.Version{}, "", err
	}
	var v history.Version
	for _, x := range l.Versions {
		if x.Version == n {
			v = x
		}
	}
	if v.Version == 0 {
		return history.Version{}, "", fmt.Errorf("%s %s has no version %d (kept: %s)", kind, id, n, kept(l))
	}
	if kind == core.KindPrompt {
		if v.Definition == "" {
			return v, "", fmt.Errorf("%s lists no definition for version %d of prompt %s: the registry is older than prompt definitions in versions, so the prompt cannot be checked here", kind.Function("versions"), n, id)
		}
		return v, v.Definition, nil
	}
	raw, err = call(rules.FnSkillsResourcesRead, map[string]any{"uri": "iii://" + id + "@" + strconv.Itoa(n)})
	if err != nil {
		return v, "", err
	}
	var read registry.ReadResult
	if err := json.Unmarshal(raw, &read); err != nil || len(read.Contents) != 1 {
		return v, "", fmt.Errorf("%s answered %s: expected one content (%v)", rules.FnSkillsResourcesRead, clip(string(raw), 200), err)
	}
	return v, read.Contents[0].Text, nil
}

// pickVersion is the version selector names in listing l: a number, a
// label, sha256:<hex> (the newest version with that digest), or "" for
// the version reads serve.
func pickVersion(call func(string, any) (json.RawMessage, error), kind core.Kind, id, selector string, l history.Listing) (int, error) {
	switch {
	case selector == "" && kind == core.KindSkill:
		raw, err := call(rules.FnCatalogGet, map[string]any{"path": id})
		if err != nil {
			return 0, err
		}
		var got core.CatalogGetOutput
		if err := json.Unmarshal(raw, &got); err != nil {
			return 0, fmt.Errorf("%s answered %s: %v", rules.FnCatalogGet, clip(string(raw), 200), err)
		}
		if got.Skill == nil || got.Skill.Version == 0 {
			return 0, fmt.Errorf("skill %s serves no published version (a folder or bundle skill, which is not signed, or every version yanked); name a version: %s@N", id, id)
		}
		return got.Skill.Version, nil
	case selector == "":
		for _, v := range l.Versions {
			if v.Yanked == "" {
				return v.Version, nil
			}
		}
		return 0, fmt.Errorf("every kept version of prompt %s is yanked; name one: %s@N", id, id)
	case strings.HasPrefix(selector, "sha256:"):
		for _, v := range l.Versions {
			if "sha256:"+v.SHA256 == selector {
				return v.Version, nil
			}
		}
		return 0, fmt.Errorf("%s %s has no version with %s (kept: %s)", kind, id, selector, kept(l))
	}
	if n, err := strconv.Atoi(selector); err == nil {
		return n, nil
	}
	if n, ok := l.Labels[selector]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("%s %s has no label %q (labels: %s)", kind, id, selector, labelNames(l))
}

func kept(l history.Listing) string {
	if len(l.Versions) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d-%d", l.Versions[len(l.Versions)-1].Version, l.Versions[0].Version)
}

func labelNames(l history.Listing) string {
	var names []string
	for k := range l.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// checkVersion verifies version v of id with content against signers, on
// the reader's side: the content's digest, the signature over it, and who
// the key belongs to in the reader's allowed_signers.
func checkVersion(signers *sshsig.AllowedSigners, principal, file string, kind core.Kind, id string, v history.Version, content string, now time.Time) verifyResult {
	res := verifyResult{Kind: string(kind), ID: id, Version: v.Version, SHA256: v.SHA256, Registry: v.SignedBy}
	sum := sha256.Sum256([]byte(content))
	if got := hex.EncodeToString(sum[:]); got != v.SHA256 {
		res.Problem, res.Detail = "bad", fmt.Sprintf("the content the registry served hashes to sha256 %s, not the %s its history lists for version %d", got, v.SHA256, v.Version)
		return res
	}
	if v.Signature == "" {
		res.Problem, res.Detail = "unsigned", "the registry holds no signature for it"
		return res
	}
	sig, err := sshsig.Verify([]byte(content), []byte(v.Signature), rules.SignatureNamespace)
	if err != nil {
		res.Problem, res.Detail = "bad", strings.TrimPrefix(err.Error(), "sshsig: ")
		if sig == nil {
			if p, perr := sshsig.Parse([]byte(v.Signature)); perr == nil {
				res.Key = p.Fingerprint
			}
		}
		return res
	}
	res.Key = sig.Fingerprint
	var who string
	if principal != "" {
		err = signers.Authorize(principal, sig.Key, rules.SignatureNamespace, now)
		who = principal
	} else {
		who, err = signers.Principal(sig.Key, rules.SignatureNamespace, now)
	}
	if err != nil {
		res.Problem = "untrusted"
		var na *sshsig.NotAllowedError
		if errors.As(err, &na) {
			res.Detail = fmt.Sprintf("%s does not trust key %s", file, sig.Fingerprint)
			if principal != "" {
				res.Detail += fmt.Sprintf(" as %q", principal)
			}
			res.Detail += fmt.Sprintf(" for namespace %s: %s", rules.SignatureNamespace, na.Reason)
		} else {
			res.Detail = err.Error()
		}
		return res
	}
	res.Verified, res.Principal = true, who
	return res
}

func printVerify(stdout, stderr io.Writer, r verifyResult) {
	what := fmt.Sprintf("%s %s version %d (sha256 %s)", r.Kind, r.ID, r.Version, clip(r.SHA256, 12))
	if r.Verified {
		fmt.Fprintf(stdout, "verified: %s is signed by %s, key %s\n", what, r.Principal, r.Key)
	} else {
		var b bytes.Buffer
		fmt.Fprintf(&b, "not verified: %s: %s", what, r.Problem)
		if r.Key != "" && r.Problem != "unsigned" {
			fmt.Fprintf(&b, " (key %s)", r.Key)
		}
		fmt.Fprintf(&b, ": %s\n", r.Detail)
		_, _ = stderr.Write(b.Bytes())
	}
	switch {
	case r.Registry != nil && (!r.Verified || *r.Registry != r.Principal):
		fmt.Fprintf(stdout, "the registry says: signed by %s\n", *r.Registry)
	case r.Registry == nil && r.Verified:
		fmt.Fprintln(stdout, "the registry says: not signed by a key it trusts")
	}
}
