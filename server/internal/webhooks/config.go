package webhooks

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
)

// Event is a kind of change a webhook can be sent for.
type Event string

// The events, as the config's events list and the body's type name them.
const (
	EventRegister   Event = "register"   // a skill registered for the first time
	EventVersion    Event = "version"    // a new version of a skill
	EventLabel      Event = "label"      // a label moved to another version
	EventRollback   Event = "rollback"   // a skill rolled back to an earlier version
	EventYank       Event = "yank"       // a version withdrawn
	EventUnyank     Event = "unyank"     // a withdrawn version served again
	EventDeprecate  Event = "deprecate"  // a skill or version marked deprecated
	EventUnregister Event = "unregister" // a skill removed
)

// Events lists every event, in the order the docs give them.
var Events = []Event{EventRegister, EventVersion, EventLabel, EventRollback, EventYank, EventUnyank, EventDeprecate, EventUnregister}

// SecretPrefix starts a Standard Webhooks secret: whsec_<base64 of the key>.
const SecretPrefix = "whsec_"

// Secret key sizes the Standard Webhooks specification asks for.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// Endpoint is one receiver the operator configured (the config's
// webhooks: list).
type Endpoint struct {
	// URL receives a POST per change: http or https, absolute.
	URL string `yaml:"url" json:"url"`
	// Secret signs the deliveries: whsec_ and the base64 of 24 to 64
	// random bytes (openssl rand -base64 32).
	Secret string `yaml:"secret" json:"secret"`
	// SecretEnv names the environment variable that holds Secret instead,
	// so the config file need not hold it (a systemd credential, a
	// container secret).
	SecretEnv string `yaml:"secret_env" json:"-"`
	// Events are the changes sent; empty sends every event.
	Events []Event `yaml:"events,omitempty" json:"events,omitempty"`
}

// Resolved is e with its secret read from SecretEnv, when it names one.
func (e Endpoint) Resolved() (Endpoint, error) {
	switch {
	case e.SecretEnv == "":
		return e, nil
	case e.Secret != "":
		return e, fmt.Errorf("webhook %s: set secret or secret_env, not both", e.URL)
	}
	e.Secret = os.Getenv(e.SecretEnv)
	if e.Secret == "" {
		return e, fmt.Errorf("webhook %s: secret_env %s: the environment variable is empty or unset", e.URL, e.SecretEnv)
	}
	return e, nil
}

// Validate says what is wrong with the endpoint, nil when nothing is
// (its secret read from SecretEnv first).
func (e Endpoint) Validate() error {
	if _, err := parseURL(e.URL); err != nil {
		return err
	}
	e, err := e.Resolved()
	if err != nil {
		return err
	}
	if _, err := ParseSecret(e.Secret); err != nil {
		return fmt.Errorf("webhook %s: %w", e.URL, err)
	}
	for _, ev := range e.Events {
		if !slices.Contains(Events, ev) {
			return fmt.Errorf("webhook %s: unknown event %q (expected one of %s)", e.URL, ev, eventList())
		}
	}
	return nil
}

func eventList() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// wants reports whether the endpoint takes event ev.
func (e Endpoint) wants(ev Event) bool { return len(e.Events) == 0 || slices.Contains(e.Events, ev) }

// endpointID names an endpoint in the queue's keys: the hash of its URL,
// so a queued delivery can only ever go to the URL it was queued for, and
// only while that URL is configured.
func endpointID(rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return hex.EncodeToString(sum[:8])
}

// ShownURL is a receiver's URL as anyone but the operator may see it: its
// scheme and host, and in place of a path or query "/…" and the first 8
// hex digits of its endpoint id. Receivers often put their secret in the
// path (Slack's and Discord's incoming webhooks) or the query, and the
// places that show a URL (the web page, which readers with the MCP token
// see; rows in shared state, which any engine client may read; refusals)
// must not hand it out. The operator has the full URL in the config.
func ShownURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(a configured URL, #" + endpointID(rawURL)[:8] + ")"
	}
	shown := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		shown += "/… #" + endpointID(rawURL)[:8]
	}
	return shown
}

// shownError is err's message with the receiver's URL shown as ShownURL
// (net/http names the URL in its errors).
func shownError(err error, rawURL string) string {
	return strings.ReplaceAll(err.Error(), rawURL, ShownURL(rawURL))
}

func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, fmt.Errorf("webhook: url is empty; give the absolute http or https URL that receives the deliveries")
	case err != nil:
		return nil, fmt.Errorf("webhook %q: not a URL: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("webhook %q: scheme %q; expected http or https", raw, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("webhook %q: no host; expected an absolute URL such as https://hooks.example.com/skills", raw)
	case u.User != nil:
		return nil, fmt.Errorf("webhook %q: credentials in the URL are refused (they would travel with every delivery); the signature authenticates the sender", redact(u))
	case u.Fragment != "":
		return nil, fmt.Errorf("webhook %q: a fragment (#…) is never sent; remove it", raw)
	}
	return u, nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// ParseSecret decodes a Standard Webhooks secret (whsec_<base64>) into its
// key.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("secret must start with %q followed by base64 (Standard Webhooks form, e.g. %s$(openssl rand -base64 32))", SecretPrefix, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		if key, err = base64.RawStdEncoding.DecodeString(b64); err != nil {
			return nil, fmt.Errorf("secret after %q is not base64: %v", SecretPrefix, err)
		}
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("secret key is %d bytes; Standard Webhooks asks for %d to %d (openssl rand -base64 32)", len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}
