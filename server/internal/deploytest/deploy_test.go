package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// repoRoot is the repository root (this package is server/internal/deploytest).
var repoRoot = func() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", "..", ".."))
}()

// TestMain removes the skills binary the tests built (testutil.BuildSkills).
func TestMain(m *testing.M) { testutil.Main(m) }

// tool finds a program; without it the test is "not run", or fails when
// make test-deploy said the tools are installed.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	if os.Getenv("DEPLOY_TESTS_REQUIRED") == "1" {
		t.Fatalf("%s is not installed (make test-deploy installs it from Debian)", name)
	}
	t.Skipf("not run: %s is not installed (make test-deploy installs it)", name)
	return ""
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// replace replaces old in s (it must be there: the test follows the file).
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the deployment file no longer contains %q; update the test with it", old)
	}
	return strings.ReplaceAll(s, old, new)
}

// The systemd unit passes `systemd-analyze verify` (with ExecStart pointed
// at a real binary, the one thing verify needs on this machine) and keeps
// the hardening the docs promise.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := tool(t, "systemd-analyze")
	unit := readFile(t, "deploy/skills.service")
	for _, want := range []string{"DynamicUser=yes", "StateDirectory=skills", "ProtectSystem=strict", "NoNewPrivileges=yes",
		"--public-url https://skills.example.com", "PrivateTmp=yes", "LoadCredential=config.yaml:/etc/skills/config.yaml",
		"--config %d/config.yaml", "EnvironmentFile=/etc/skills/env"} {
		if !strings.Contains(unit, want) {
			t.Errorf("deploy/skills.service lacks %s", want)
		}
	}
	for _, breaks := range []string{"\nRestrictNamespaces=", "\nProtectKernelTunables=", "\nProtectHostname=", "\nPrivateUsers=", "\nProtectProc="} {
		if strings.Contains(unit, breaks) {
			t.Errorf("deploy/skills.service sets %s, which breaks the bubblewrap sandbox", strings.TrimSpace(breaks))
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "skills.service")
	if err := os.WriteFile(path, []byte(replace(t, unit, "ExecStart=/usr/local/bin/skills", "ExecStart="+testutil.SkillsBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The Caddyfile adapts, proxies to the registry and flushes at once.
func TestCaddyfileAdapts(t *testing.T) {
	caddy := tool(t, "caddy")
	out, err := exec.Command(caddy, "adapt", "--config", filepath.Join(repoRoot, "deploy", "Caddyfile"), "--adapter", "caddyfile").Output()
	if err != nil {
		t.Fatalf("caddy adapt: %v", err)
	}
	for _, want := range []string{`"dial":"127.0.0.1:49135"`, `"flush_interval":-1`, `"skills.example.com"`, `"uri":"/readyz"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("adapted Caddyfile lacks %s: %s", want, out)
		}
	}
}

// selfSigned writes a certificate for skills.example.com and returns the
// cert and key paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skills.example.com"},
		DNSNames: []string{"skills.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// start runs a process until the test ends (SIGTERM, then SIGKILL).
func start(t *testing.T, name string, args ...string) *testutil.Buffer {
	t.Helper()
	return startEnv(t, nil, name, args...)
}

// startEnv is start with env added to the test's environment.
func startEnv(t *testing.T, env []string, name string, args ...string) *testutil.Buffer {
	t.Helper()
	cmd := exec.Command(name, args...)
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(append(os.Environ(), "SKILLS_LOG=info"), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), out.String())
		}
	})
	return out
}

// publicURL is the address the examples serve (deploy/nginx.conf,
// deploy/Caddyfile), resolved to the proxy's port on 127.0.0.1 here.
const publicURL = "https://skills.example.com"

// startRegistry runs `skills --standalone` on free loopback ports with the
// token s3cret and extra flags, and waits until it is ready.
func startRegistry(t *testing.T, dir string, extra ...string) (engineAddr, httpAddr string, logs *testutil.Buffer) {
	t.Helper()
	engineAddr, httpAddr = testutil.FreeAddr(t), testutil.FreeAddr(t)
	logs = start(t, testutil.SkillsBinary(t), append([]string{"--standalone", "--config", filepath.Join(dir, "none.yaml"), "--url", "ws://" + engineAddr,
		"--data", filepath.Join(dir, "data"), "--mcp-addr", httpAddr, "--mcp-token", "s3cret"}, extra...)...)
	testutil.Eventually(t, 60*time.Second, "the registry is ready at "+httpAddr, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return engineAddr, httpAddr, logs
}

// throughProxy is an HTTPS client of https://skills.example.com whose
// connections go to a proxy's ports on 127.0.0.1 (tls for :443, plain for
// :80). Every connection is closed when its deadline passes, so a proxy
// that holds a response back (buffering) fails the test instead of
// hanging it.
type throughProxy struct {
	client    *http.Client
	transport *http.Transport
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	deadline  context.Context
	errorLog  func() string // the proxy's log, for failure messages
}

func newThroughProxy(t *testing.T, pool *x509.CertPool, tlsAddr, plainAddr string, errorLog func() string) *throughProxy {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, "the proxy listens on "+tlsAddr, func() bool {
		c, err := net.Dial("tcp", tlsAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	deadline, cancelDeadline := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancelDeadline)
	var conns connSet
	context.AfterFunc(deadline, conns.closeAll)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		target := map[string]string{"skills.example.com:443": tlsAddr, "skills.example.com:80": plainAddr}[addr]
		if target == "" {
			return nil, fmt.Errorf("unexpected address %s", addr)
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, target)
		if err == nil {
			conns.add(c)
		}
		return c, err
	}
	transport := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "skills.example.com"}}
	t.Cleanup(transport.CloseIdleConnections)
	return &throughProxy{transport: transport, dial: dial, deadline: deadline, errorLog: errorLog,
		client: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// send makes one request to https://skills.example.com; mod may add
// headers. It returns the response (body read and closed) and the body.
func (p *throughProxy) send(t *testing.T, method, path, token, body string, mod ...func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, publicURL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for _, m := range mod {
		m(req)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\nproxy log:\n%s", method, path, err, p.errorLog())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// checkRegistryThroughProxy: the probes, /rpc with and without the token,
// and an MCP client that hears of a skill registered meanwhile on its
// open SSE stream (deploy-check-0 is registered first).
func checkRegistryThroughProxy(t *testing.T, p *throughProxy, engineAddr string, logs *testutil.Buffer) {
	t.Helper()
	if resp, body := p.send(t, http.MethodGet, "/readyz", "", ""); resp.StatusCode != 200 || body != "ready\n" {
		t.Errorf("/readyz through the proxy: %d %q", resp.StatusCode, body)
	}
	if resp, body := p.send(t, http.MethodPost, "/rpc", "s3cret", `{"jsonrpc":"2.0","id":1,"method":"list_skills","params":{}}`); resp.StatusCode != 200 || !strings.Contains(body, `"result"`) {
		t.Errorf("/rpc through the proxy: %d %s", resp.StatusCode, body)
	}
	if resp, _ := p.send(t, http.MethodPost, "/rpc", "", `{"jsonrpc":"2.0","id":1,"method":"list_skills","params":{}}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/rpc through the proxy without the token: %d, want 401", resp.StatusCode)
	}

	// An MCP client through the proxy: it lists, then hears of a skill
	// registered meanwhile on its open SSE stream.
	changed := make(chan struct{}, 16)
	mcpClient := sdk.NewClient(&sdk.Implementation{Name: "deploytest", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	ctx := p.deadline
	cs, err := mcpClient.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: publicURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"s3cret", p.transport}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP connect through the proxy: %v\nregistry log:\n%s", err, logs.String())
	}
	defer cs.Close()
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatalf("resources/list through the proxy: %v", err)
	}
	publisher := iii.RegisterWorker("ws://"+engineAddr, iii.WithName("deploytest-publisher"))
	defer publisher.Close()
	if err := publisher.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// Registering again until a notification arrives covers a stream that
	// opens after the first registration; the deadline bounds a buffered
	// (broken) proxy.
	for i := 0; ; i++ {
		data, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("deploy-check-%d", i), "skill": "# Deploy check\n"})
		if _, err := publisher.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsRegister, Data: data}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
			return
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("no resources/list_changed reached the MCP client through the proxy (is the SSE stream buffered?)\nproxy log:\n%s", p.errorLog())
		}
	}
}

// setCookie is the Set-Cookie of resp named name (nil when none).
func setCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// checkWebThroughProxy signs in to the web page through the proxy as a
// browser on https://skills.example.com does and moves a label of
// deploy-check-0 (an action): both succeed, and the cookies are Secure.
// A cross-site post with forged forwarded headers is refused.
func checkWebThroughProxy(t *testing.T, p *throughProxy) {
	t.Helper()
	resp, body := p.send(t, http.MethodGet, "/signin", "", "")
	csrf := setCookie(resp, "skills_web_csrf")
	if resp.StatusCode != http.StatusOK || csrf == nil || !csrf.Secure || !strings.Contains(body, `value="`+csrf.Value+`"`) {
		t.Fatalf("sign-in form through the proxy: %d, CSRF cookie %+v (want Secure and in the form)", resp.StatusCode, csrf)
	}
	form := func(origin string, fields url.Values, cookies ...*http.Cookie) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(fields.Encode()))
			r.ContentLength = int64(len(fields.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Origin", origin)
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			for _, c := range cookies {
				r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
		}
	}
	resp, body = p.send(t, http.MethodPost, "/signin", "", "", form(publicURL, url.Values{"csrf": {csrf.Value}, "token": {"s3cret"}, "next": {"/"}}, csrf))
	session := setCookie(resp, "skills_web_token")
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.Secure || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign-in through the proxy: %d %q, token cookie %+v (want 303 and a Secure HttpOnly SameSite=Strict cookie)", resp.StatusCode, body, session)
	}
	label := url.Values{"csrf": {csrf.Value}, "kind": {"skill"}, "id": {"deploy-check-0"}, "label": {"staging"}, "version": {"1"}}
	forged := func(r *http.Request) {
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("X-Forwarded-Host", "evil.example")
		r.Header.Set("Forwarded", "proto=https;host=evil.example")
	}
	if resp, body := p.send(t, http.MethodPost, "/actions/label", "", "", form("https://evil.example", label, csrf, session), forged); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site action with forged forwarded headers through the proxy: %d %q, want 403", resp.StatusCode, body)
	}
	resp, body = p.send(t, http.MethodPost, "/actions/label", "", "", form(publicURL, label, csrf, session))
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "done=label") || !strings.Contains(loc, "label=staging") {
		t.Errorf("label move through the proxy: %d, Location %q, body %q", resp.StatusCode, loc, body)
	}
}

// The nginx example, run on 127.0.0.1 with a throwaway certificate in front
// of a real registry, serves https://skills.example.com: the probes, /rpc,
// /mcp with its SSE stream unbuffered (a notification arrives while the
// stream stays open), and the web page's sign-in and an action with Secure
// cookies. Port 80 redirects to https.
func TestBehindNginx(t *testing.T) {
	nginx := tool(t, "nginx")
	dir := t.TempDir()
	engineAddr, httpAddr, logs := startRegistry(t, dir, "--public-url", publicURL)

	certPath, keyPath, pool := selfSigned(t, dir)
	tlsAddr, plainAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	site := readFile(t, "deploy/nginx.conf")
	site = replace(t, site, "server 127.0.0.1:49135;", "server "+httpAddr+";")
	site = replace(t, site, "    listen 443 ssl http2;\n", "    listen "+tlsAddr+" ssl http2;\n")
	site = replace(t, site, "    listen [::]:443 ssl http2;\n", "")
	site = replace(t, site, "    listen 80;\n", "    listen "+plainAddr+";\n")
	site = replace(t, site, "    listen [::]:80;\n", "")
	site = replace(t, site, "/etc/letsencrypt/live/skills.example.com/fullchain.pem", certPath)
	site = replace(t, site, "/etc/letsencrypt/live/skills.example.com/privkey.pem", keyPath)
	if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // workers must read the temp dir
	}
	main := user + `pid nginx.pid;
error_log error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path tmp-body; proxy_temp_path tmp-proxy; fastcgi_temp_path tmp-fcgi;
    uwsgi_temp_path tmp-uwsgi; scgi_temp_path tmp-scgi;
    include site.conf;
}
`
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nginx, "-t", "-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	start(t, nginx, "-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	p := newThroughProxy(t, pool, tlsAddr, plainAddr, func() string { return readTail(filepath.Join(dir, "error.log")) })

	plain := &http.Client{Transport: &http.Transport{DialContext: p.dial},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := plain.Get("http://skills.example.com/mcp"); err != nil || resp.StatusCode != http.StatusMovedPermanently ||
		resp.Header.Get("Location") != "https://skills.example.com/mcp" {
		t.Errorf("port 80: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	checkRegistryThroughProxy(t, p, engineAddr, logs)
	checkWebThroughProxy(t, p)
}

// The Caddyfile, run by Caddy on 127.0.0.1 with a throwaway certificate
// (instead of one from Let's Encrypt) in front of a real registry, serves
// https://skills.example.com as the nginx example does: the probes, /rpc,
// /mcp with its SSE stream, the web page's sign-in and an action.
func TestBehindCaddy(t *testing.T) {
	caddy := tool(t, "caddy")
	dir := t.TempDir()
	engineAddr, httpAddr, logs := startRegistry(t, dir, "--public-url", publicURL)

	certPath, keyPath, pool := selfSigned(t, dir)
	tlsAddr, plainAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	_, plainPort, _ := net.SplitHostPort(plainAddr)
	site := readFile(t, "deploy/Caddyfile")
	site = replace(t, site, "skills.example.com {\n", "skills.example.com {\n\ttls "+certPath+" "+keyPath+"\n")
	site = replace(t, site, "reverse_proxy 127.0.0.1:49135 {", "reverse_proxy "+httpAddr+" {")
	// Global options of this machine only: its ports and storage, no admin
	// endpoint, no redirect listener, no trust store changes.
	global := fmt.Sprintf("{\n\tadmin off\n\tauto_https disable_redirects\n\thttp_port %s\n\thttps_port %s\n\tdefault_bind 127.0.0.1\n"+
		"\tskip_install_trust\n\tstorage file_system %s\n}\n\n", plainPort, tlsPort, filepath.Join(dir, "caddy-storage"))
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(global+site), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its own home: Caddy saves its config and data there.
	out := startEnv(t, []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg-config")},
		caddy, "run", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile")
	p := newThroughProxy(t, pool, tlsAddr, plainAddr, out.String)
	checkRegistryThroughProxy(t, p, engineAddr, logs)
	checkWebThroughProxy(t, p)
}

// Forwarded headers never tell the web page its scheme. A registry not
// told its public address (no --public-url), reached directly by a client
// that claims to be a TLS proxy (X-Forwarded-Proto, Forwarded), refuses a
// sign-in from https://skills.example.com with a message that names
// --public-url; one told it keeps its cookies Secure whatever the client
// claims.
func TestForwardedHeadersAreNotTrusted(t *testing.T) {
	dir := t.TempDir()
	_, notTold, _ := startRegistry(t, filepath.Join(dir, "a"), "--mcp-allow-host", "skills.example.com")
	_, told, _ := startRegistry(t, filepath.Join(dir, "b"), "--public-url", publicURL)
	direct := func(httpAddr, method, path, proto string, fields url.Values) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+httpAddr+path, strings.NewReader(fields.Encode()))
		req.Host = "skills.example.com"
		req.Header.Set("X-Forwarded-Proto", proto)
		req.Header.Set("X-Forwarded-Host", "skills.example.com")
		req.Header.Set("Forwarded", "proto="+proto+";host=skills.example.com")
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", publicURL)
			req.AddCookie(&http.Cookie{Name: "skills_web_csrf", Value: fields.Get("csrf")})
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	csrf := strings.Repeat("ab", 16)
	resp, body := direct(notTold, http.MethodPost, "/signin", "https", url.Values{"csrf": {csrf}, "token": {"s3cret"}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "--public-url (config public_url) "+publicURL) || setCookie(resp, "skills_web_token") != nil {
		t.Errorf("sign-in with forged X-Forwarded-Proto on a registry without --public-url: %d %q, want 403 naming --public-url and no cookie", resp.StatusCode, body)
	}
	resp, _ = direct(told, http.MethodGet, "/signin", "http", nil)
	if c := setCookie(resp, "skills_web_csrf"); resp.StatusCode != http.StatusOK || c == nil || !c.Secure {
		t.Errorf("X-Forwarded-Proto: http on a registry with --public-url %s: %d, CSRF cookie %+v, want Secure", publicURL, resp.StatusCode, c)
	}
}

// connSet closes every connection it was given, at once.
type connSet struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return
	}
	s.conns = append(s.conns, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.conns {
		_ = c.Close()
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// readTail is the end of a log file, for failure messages.
func readTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
