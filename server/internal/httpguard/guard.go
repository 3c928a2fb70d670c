// Package httpguard holds the checks every listener of the skills server
// applies before it serves a request: the browser Origin (so that a web page
// the user visits cannot drive a local endpoint), the Host header (so that a
// DNS-rebinding page cannot either) and an optional shared bearer token.
//
// The engine's worker socket, the MCP endpoint and the Skills Protocol
// endpoint all use one Policy, so the rules are the same on every door.
// Clients that are not browsers send no Origin and are never refused for it.
package httpguard

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Policy says who may use an endpoint. The zero value allows requests
// without an Origin or with a loopback Origin, any Host, and no token.
type Policy struct {
	// AllowedOrigins are extra browser origins (scheme://host[:port], e.g.
	// "https://app.example") allowed besides loopback ones (http(s) on
	// localhost, *.localhost, 127.0.0.0/8 or [::1], any port). "*" allows
	// every origin.
	AllowedOrigins []string
	// OriginsSetting names where an operator adds AllowedOrigins (a flag
	// such as "--engine-allow-origin"), so a refused browser client is
	// told how to be let in.
	OriginsSetting string
	// AllowedHosts are the Host header values accepted besides loopback
	// names and the listener's own address (the names a reverse proxy
	// forwards, e.g. "skills.example.com"): a host ("box.lan", any port),
	// a host:port ("box.lan:8443", that port only), "*.example.com" (every
	// subdomain of example.com, not example.com itself) or "*" (any Host:
	// the check is off). Names compare without regard to case. Only used
	// when CheckHost is set.
	AllowedHosts []string
	// HostsSetting names where an operator adds AllowedHosts (a flag such
	// as "--mcp-allow-host"), so a refused Host is told how to be let in.
	HostsSetting string
	// CheckHost refuses requests whose Host is neither a loopback name,
	// nor ListenAddr's host, nor one of AllowedHosts: a page served from
	// an attacker's name that resolves to 127.0.0.1 (DNS rebinding)
	// reaches the listener with that name in Host.
	CheckHost bool
	// ListenAddr is the address the listener is bound to (host:port); its
	// host is accepted in Host when CheckHost is set.
	ListenAddr string
	// Token, when set, must be presented as "Authorization: Bearer <Token>".
	Token string
	// TokenParam, when set, names a URL query parameter that may carry the
	// token instead of the header: WebSocket clients that cannot set
	// headers still present it by dialing ws://host:port/?token=<Token>.
	TokenParam string
}

// Refusal is why a request was refused, with the HTTP status to answer.
type Refusal struct {
	Status  int
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// CheckOrigin applies the Origin rule alone (nil when allowed).
func (p Policy) CheckOrigin(r *http.Request) *Refusal {
	o := r.Header.Get("Origin")
	if o == "" || OriginAllowed(o, p.AllowedOrigins) {
		return nil
	}
	allowed := "only loopback origins may connect"
	if p.OriginsSetting != "" {
		allowed = "only loopback origins and those given with " + p.OriginsSetting + " may connect"
	}
	return &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf("Forbidden: origin %s is not allowed (%s)", o, allowed)}
}

// CheckHostHeader applies the Host rule alone (nil when allowed or off).
// Without a ListenAddr the listener's address is taken from the request
// (http.LocalAddrContextKey).
func (p Policy) CheckHostHeader(r *http.Request) *Refusal {
	if !p.CheckHost {
		return nil
	}
	if p.ListenAddr == "" {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
			p.ListenAddr = a.String()
		}
	}
	if p.hostAllowed(r.Host) {
		return nil
	}
	expected := "localhost, 127.0.0.1 or the listen address"
	if p.HostsSetting != "" {
		expected += ", or a name given with " + p.HostsSetting
	}
	return &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf(
		"Forbidden: Host %q is not a name this server answers to (expected %s)", r.Host, expected)}
}

// CheckToken applies the bearer token rule alone (nil when no token is
// configured or the request carries it).
func (p Policy) CheckToken(r *http.Request) *Refusal {
	if p.Token == "" || BearerOK(r.Header.Get("Authorization"), p.Token) {
		return nil
	}
	if p.TokenParam != "" {
		if got := r.URL.Query().Get(p.TokenParam); got != "" &&
			subtle.ConstantTimeCompare([]byte(got), []byte(p.Token)) == 1 {
			return nil
		}
	}
	return &Refusal{Status: http.StatusUnauthorized, Message: "Unauthorized: a valid bearer token is required (Authorization: Bearer <token>)"}
}

// Check applies Origin, Host and token rules in that order.
func (p Policy) Check(r *http.Request) *Refusal {
	if ref := p.CheckOrigin(r); ref != nil {
		return ref
	}
	if ref := p.CheckHostHeader(r); ref != nil {
		return ref
	}
	return p.CheckToken(r)
}

// Wrap serves next only for requests that pass Check; others get the
// refusal's status and message as plain text.
func (p Policy) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := p.Check(r); ref != nil {
			if ref.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="skills"`)
			}
			http.Error(w, ref.Message, ref.Status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p Policy) hostAllowed(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if IsLoopbackHost(host) || HostListed(hostport, host, p.AllowedHosts) {
		return true
	}
	if lh, _, err := net.SplitHostPort(p.ListenAddr); err == nil && lh != "" {
		if ip := net.ParseIP(lh); ip != nil && ip.IsUnspecified() {
			// Bound to every interface: the operator chose to be reachable
			// by any address of this machine; names still have to be listed.
			return net.ParseIP(host) != nil
		}
		return strings.EqualFold(host, lh)
	}
	return false
}

// HostListed reports whether a Host header (hostport, and host without
// its port) matches one of the AllowedHosts patterns (see Policy).
func HostListed(hostport, host string, patterns []string) bool {
	for _, pat := range patterns {
		switch {
		case pat == "*":
			return true
		case strings.HasPrefix(pat, "*."):
			// "*.example.com" matches "a.example.com" and "a.b.example.com";
			// the label before the suffix must not be empty.
			suffix := pat[1:]
			if len(host) > len(suffix) && strings.HasSuffix(strings.ToLower(host), strings.ToLower(suffix)) {
				return true
			}
		case strings.EqualFold(pat, hostport), strings.EqualFold(pat, host):
			return true
		}
	}
	return false
}

// CheckHostPatterns validates AllowedHosts as an operator typed them, so a
// mistake is refused at start-up rather than turning into 403s: each is a
// host name or IP, optionally with :port, "*.domain" or "*"; a URL
// ("https://…") or a path is not a host.
func CheckHostPatterns(setting string, patterns []string) error {
	for _, pat := range patterns {
		if pat == "*" {
			continue
		}
		name := strings.TrimPrefix(pat, "*.")
		if h, port, err := net.SplitHostPort(name); err == nil && port != "" && strings.Trim(port, "0123456789") == "" {
			name = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		}
		if name == "" || strings.ContainsAny(name, "/@?#* ") || strings.Contains(name, ":") && net.ParseIP(name) == nil {
			return fmt.Errorf("%s %q: expected a host name such as skills.example.com, host:port, *.example.com or *", setting, pat)
		}
	}
	return nil
}

// OriginAllowed reports whether a browser origin may use the endpoint:
// loopback http(s) origins always, others when listed in extra ("*" lists
// every origin).
func OriginAllowed(origin string, extra []string) bool {
	if slices.Contains(extra, origin) || slices.Contains(extra, "*") {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether h (a host name or IP, no port) names this
// machine's loopback interface.
func IsLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) binds only
// the loopback interface. An empty or unspecified host (":8080",
// "0.0.0.0:8080") binds every interface.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return host != "" && IsLoopbackHost(host)
}

// BearerOK compares an Authorization header with the token in constant time.
func BearerOK(header, token string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// PublicOrigin checks the URL browsers use to reach a listener through a
// reverse proxy that terminates TLS (https://skills.example.com) and
// returns its origin as browsers send it (scheme://host[:port], lower case,
// without a default port) and its host. The listener cannot learn that
// URL from the request itself: behind the proxy it sees plain HTTP, and
// X-Forwarded-* headers can be written by any client that reaches the
// listener without the proxy. The operator names it instead; setting names
// where (a flag), for the error.
func PublicOrigin(setting, raw string) (origin, host string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("%s %q: %s; expected the URL browsers use, such as https://skills.example.com", setting, raw, why)
	}
	u, perr := url.Parse(raw)
	switch {
	case perr != nil:
		return bad("not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return bad("the scheme must be https (or http)")
	case u.Host == "" || u.Hostname() == "":
		return bad("no host name")
	case u.User != nil:
		return bad("a user name or password does not belong in it")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		return bad("the page is served at the root of its host: no path, query or fragment")
	}
	host = strings.ToLower(u.Hostname())
	hostport := bracket(host)
	// url.Parse has checked the port is a number; browsers leave a
	// default port out of Origin.
	if port := u.Port(); port != "" && !(u.Scheme == "https" && port == "443") && !(u.Scheme == "http" && port == "80") {
		hostport = net.JoinHostPort(host, port)
	}
	origin = u.Scheme + "://" + hostport
	return origin, host, nil
}

// bracket puts an IPv6 literal in brackets, as URLs and Origin write it.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
