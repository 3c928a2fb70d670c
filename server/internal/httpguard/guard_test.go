package httpguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func req(host, origin, auth string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return r
}

func TestPolicy(t *testing.T) {
	strict := Policy{CheckHost: true, ListenAddr: "127.0.0.1:49134", Token: "s3cret", AllowedOrigins: []string{"https://app.example"}}
	cases := []struct {
		name   string
		p      Policy
		r      *http.Request
		status int // 0 = allowed
	}{
		{"no origin, zero policy", Policy{}, req("evil.example:1", "", ""), 0},
		{"loopback origin", Policy{}, req("127.0.0.1:1", "http://localhost:3000", ""), 0},
		{"foreign origin", Policy{}, req("127.0.0.1:1", "https://evil.example", ""), http.StatusForbidden},
		{"null origin", Policy{}, req("127.0.0.1:1", "null", ""), http.StatusForbidden},
		{"listed origin", strict, req("127.0.0.1:49134", "https://app.example", "Bearer s3cret"), 0},
		{"wildcard origin", Policy{AllowedOrigins: []string{"*"}}, req("x", "https://any.example", ""), 0},
		{"rebinding host", strict, req("evil.example:49134", "", "Bearer s3cret"), http.StatusForbidden},
		{"localhost host", strict, req("localhost:49134", "", "Bearer s3cret"), 0},
		{"ipv6 loopback host", strict, req("[::1]:49134", "", "Bearer s3cret"), 0},
		{"missing token", strict, req("127.0.0.1:49134", "", ""), http.StatusUnauthorized},
		{"wrong token", strict, req("127.0.0.1:49134", "", "Bearer nope"), http.StatusUnauthorized},
		{"basic scheme", strict, req("127.0.0.1:49134", "", "Basic s3cret"), http.StatusUnauthorized},
		{"listed host", Policy{CheckHost: true, ListenAddr: "127.0.0.1:1", AllowedHosts: []string{"box.lan"}}, req("box.lan:1", "", ""), 0},
		{"any-interface listener takes IPs", Policy{CheckHost: true, ListenAddr: "0.0.0.0:1"}, req("192.0.2.7:1", "", ""), 0},
		{"any-interface listener refuses names", Policy{CheckHost: true, ListenAddr: "0.0.0.0:1"}, req("evil.example:1", "", ""), http.StatusForbidden},
	}
	for _, c := range cases {
		ref := c.p.Check(c.r)
		got := 0
		if ref != nil {
			got = ref.Status
		}
		if got != c.status {
			t.Errorf("%s: status %d, want %d (%v)", c.name, got, c.status, ref)
		}
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:49134": true, "localhost:1": true, "[::1]:2": true,
		":49134": false, "0.0.0.0:1": false, "192.0.2.1:1": false, "[::]:1": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("127.0.0.1:49134", "http://localhost", "Bearer x")
	f.Add("[::1", "://", "Bearer")
	f.Fuzz(func(t *testing.T, host, origin, auth string) {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		r.Header.Set("Authorization", auth)
		_ = Policy{CheckHost: true, ListenAddr: "127.0.0.1:1", Token: "x"}.Check(r)
	})
}

func TestTokenFromQueryParameter(t *testing.T) {
	p := Policy{Token: "s3cret", TokenParam: "token"}
	for url, ok := range map[string]bool{"/?token=s3cret": true, "/?token=nope": false, "/": false, "/?other=s3cret": false} {
		r := httptest.NewRequest(http.MethodGet, url, nil)
		if got := p.CheckToken(r) == nil; got != ok {
			t.Errorf("%s: allowed=%v; want %v", url, got, ok)
		}
	}
	noParam := Policy{Token: "s3cret"}
	if noParam.CheckToken(httptest.NewRequest(http.MethodGet, "/?token=s3cret", nil)) == nil {
		t.Error("the query parameter must not count unless TokenParam names it")
	}
}

// A refused browser origin is told how an operator lets it in.
func TestOriginRefusalNamesTheSetting(t *testing.T) {
	r := req("127.0.0.1:1", "https://evil.example", "")
	if ref := (Policy{}).Check(r); ref == nil || !strings.HasSuffix(ref.Message, "(only loopback origins may connect)") {
		t.Errorf("no setting: %v", ref)
	}
	ref := Policy{OriginsSetting: "--engine-allow-origin"}.Check(r)
	if ref == nil || !strings.Contains(ref.Message, "origin https://evil.example is not allowed (only loopback origins and those given with --engine-allow-origin may connect)") {
		t.Errorf("with setting: %v", ref)
	}
}

// Names a reverse proxy forwards are admitted only when listed: exactly,
// with a port, as a wildcard subdomain, or all of them with "*".
func TestAllowedHosts(t *testing.T) {
	p := Policy{CheckHost: true, ListenAddr: "127.0.0.1:49135", HostsSetting: "--mcp-allow-host",
		AllowedHosts: []string{"skills.example.com", "*.skills.test", "box.lan:8443"}}
	for host, ok := range map[string]bool{
		"skills.example.com":      true,
		"SKILLS.Example.COM:443":  true,
		"other.example.com":       false,
		"a.skills.test":           true,
		"a.b.skills.test:80":      true,
		"skills.test":             false, // the wildcard is for subdomains only
		"evilskills.test":         false,
		"box.lan:8443":            true,
		"box.lan:8444":            false,
		"box.lan":                 false,
		"127.0.0.1:49135":         true,
		"localhost":               true,
		"skills.example.com.evil": false,
	} {
		if got := p.CheckHostHeader(req(host, "", "")) == nil; got != ok {
			t.Errorf("Host %q: allowed=%v, want %v", host, got, ok)
		}
	}
	if any := (Policy{CheckHost: true, ListenAddr: "127.0.0.1:1", AllowedHosts: []string{"*"}}); any.CheckHostHeader(req("whatever.example", "", "")) != nil {
		t.Error(`"*" must admit every Host`)
	}
	ref := p.CheckHostHeader(req("evil.example", "", ""))
	want := `Forbidden: Host "evil.example" is not a name this server answers to (expected localhost, 127.0.0.1 or the listen address, or a name given with --mcp-allow-host)`
	if ref == nil || ref.Message != want || ref.Status != http.StatusForbidden {
		t.Errorf("refusal = %v, want 403 %q", ref, want)
	}
}

// Without ListenAddr the Host is compared with the address the request
// actually arrived on.
func TestHostCheckUsesTheRequestsLocalAddress(t *testing.T) {
	srv := httptest.NewServer(Policy{CheckHost: true}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
	defer srv.Close()
	for host, want := range map[string]int{srv.Listener.Addr().String(): 200, "evil.example": 403} {
		r, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		r.Host = host
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestCheckHostPatterns(t *testing.T) {
	if err := CheckHostPatterns("--mcp-allow-host", []string{"skills.example.com", "*.example.com", "box:8080", "*", "192.0.2.1", "[::1]:80"}); err != nil {
		t.Errorf("valid patterns refused: %v", err)
	}
	for _, bad := range []string{"https://skills.example.com", "skills.example.com/mcp", "", "a b", "user@host"} {
		err := CheckHostPatterns("--mcp-allow-host", []string{bad})
		if err == nil || !strings.Contains(err.Error(), "--mcp-allow-host") || !strings.Contains(err.Error(), "expected a host name") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestPublicOrigin(t *testing.T) {
	for raw, want := range map[string][2]string{
		"https://skills.example.com":       {"https://skills.example.com", "skills.example.com"},
		"https://Skills.Example.COM/":      {"https://skills.example.com", "skills.example.com"},
		"https://skills.example.com:443":   {"https://skills.example.com", "skills.example.com"},
		"https://skills.example.com:8443/": {"https://skills.example.com:8443", "skills.example.com"},
		"http://10.0.0.5:49135":            {"http://10.0.0.5:49135", "10.0.0.5"},
		"http://box.lan:80":                {"http://box.lan", "box.lan"},
		"https://[2001:db8::1]:8443":       {"https://[2001:db8::1]:8443", "2001:db8::1"},
		"https://[2001:db8::1]":            {"https://[2001:db8::1]", "2001:db8::1"},
	} {
		origin, host, err := PublicOrigin("--public-url", raw)
		if err != nil || origin != want[0] || host != want[1] {
			t.Errorf("PublicOrigin(%q) = %q, %q, %v; want %q, %q", raw, origin, host, err, want[0], want[1])
		}
	}
	for raw, why := range map[string]string{
		"skills.example.com":              "the scheme must be https",
		"ftp://skills.example.com":        "the scheme must be https",
		"https://":                        "no host name",
		"https://user:pw@skills.example":  "user name or password",
		"https://skills.example.com/app":  "no path, query or fragment",
		"https://skills.example.com/?a=1": "no path, query or fragment",
		"https://skills.example.com/#top": "no path, query or fragment",
		"https://skills.example.com:x":    "not a URL",
		"https://skills example.com":      "not a URL",
	} {
		_, _, err := PublicOrigin("--public-url", raw)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--public-url") ||
			!strings.Contains(err.Error(), "https://skills.example.com") {
			t.Errorf("PublicOrigin(%q): %v; want an error saying %q", raw, err, why)
		}
	}
}
