package iii

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EngineURLEnv is the environment variable that names the engine when a
// program gives no URL (the official SDKs read the same one).
const EngineURLEnv = "III_URL"

// EngineURL resolves the engine's address the way the official SDKs'
// registerWorker does: raw when it is not empty, else $III_URL, else
// DefaultEngineURL. An address that cannot be an engine's (not ws:// or
// wss://, no host, a bad port, a fragment, a space or control character) is
// an error that names it and says what is wrong: such an address never
// connects, so New and RegisterWorker stop the client at once with that
// error instead of retrying it. The Node and Python publishers apply the
// same rules with the same messages (conformance/vectors/engine_urls.json).
func EngineURL(raw string) (string, error) {
	from := ""
	if raw == "" {
		raw, from = os.Getenv(EngineURLEnv), " (from "+EngineURLEnv+")"
		if raw == "" {
			return DefaultEngineURL, nil
		}
	}
	if why := engineURLProblem(raw); why != "" {
		return "", fmt.Errorf("invalid engine URL %s%s: %s; expected ws://host:port or wss://host:port", quoteJSON(raw), from, why)
	}
	return raw, nil
}

// engineURLProblem says what is wrong with an engine URL, or "" when
// nothing is. It reads the URL by hand, not with net/url, so the three
// SDKs (each with its own URL parser) give the same verdict.
func engineURLProblem(raw string) string {
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return "it holds a space, a control character or a non-ASCII character"
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return "it has no scheme"
	}
	if s := strings.ToLower(scheme); s != "ws" && s != "wss" {
		return "the scheme is " + quoteJSON(s) + ", not ws or wss"
	}
	if strings.Contains(rest, "#") {
		return "it has a fragment (#…)"
	}
	authority := rest
	if i := strings.IndexAny(authority, "/?"); i >= 0 {
		authority = authority[:i]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.Index(authority, "]")
		if end < 0 {
			return "it has no host"
		}
		host, port = authority[1:end], authority[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return "the port is not a number from 1 to 65535"
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.Index(authority, ":"); i >= 0 {
		host, port = authority[:i], authority[i+1:]
	}
	if host == "" {
		return "it has no host"
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return "the port is not a number from 1 to 65535"
		}
	}
	return ""
}

// quoteJSON is s as a JSON string without HTML escaping, as the Node and
// Python publishers quote it.
func quoteJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
