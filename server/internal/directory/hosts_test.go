package directory

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// hostOf is the host:port of a URL, for download_hosts.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// countingListener accepts TCP connections on loopback and records them,
// standing in for a host an attacker wants the server to dial.
type countingListener struct {
	ln       net.Listener
	accepted chan string // remote address of each accepted connection, in order
}

func listenCounting(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &countingListener{ln: ln, accepted: make(chan string, 1024)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted <- conn.RemoteAddr().String()
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return c
}

func (c *countingListener) addr() string { return c.ln.Addr().String() }

func (c *countingListener) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// dialsSoFar is how many connections reached the listener before this
// call: it dials once itself and counts the connections accepted before
// its own (the kernel's accept queue hands them over in order).
func (c *countingListener) dialsSoFar(t *testing.T) int {
	t.Helper()
	conn, err := net.Dial("tcp", c.addr())
	if err != nil {
		t.Fatal(err)
	}
	mine := conn.LocalAddr().String()
	_ = conn.Close()
	n := 0
	for remote := range c.accepted {
		if remote == mine {
			return n
		}
		n++
	}
	return n
}

// TestDownloadDialsOnlyAllowedHosts is the download-hosts attack over iii: a
// caller of directory::skills::download names host:ports for git over TLS
// and SSH and for the registry. Without download_hosts every download is
// refused with an error naming the setting; with it, only the listed
// hosts are dialed (default port unless a port is listed), every form of
// repository URL included, and a registry redirect to another host is not
// followed. The target listener sees no connection and the folder keeps
// what it held.
func TestDownloadDialsOnlyAllowedHosts(t *testing.T) {
	target := listenCounting(t)
	root := filepath.Join(t.TempDir(), "skills")
	put(t, root, "victim/SKILL.md", "---\nname: victim\ndescription: kept\n---\n# Kept\n")
	put(t, root, "mailer/send.md", "# Kept mailer\n")

	attacks := []map[string]any{
		{"repo": "https://" + target.addr() + "/r.git", "skill": "victim"},
		{"repo": "ssh://git@" + target.addr() + "/r.git", "skill": "victim"},
		{"repo": "ssh://" + target.addr() + "/r.git", "skill": "victim"},
		{"repo": "git@127.0.0.1:r.git", "skill": "victim"},
		{"worker": "mailer"},
	}
	t.Run("no download_hosts: every download is refused", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.RegistryURL = "http://" + target.addr()
		s := startStack(t, []string{root}, cfg, Options{})
		for _, a := range attacks {
			s.refused(t, FnSkillsDownload, a, rules.CodeForbidden, "downloads are off: download_hosts in config.yaml lists no host")
		}
	})

	// A registry that is allowed but redirects to the target.
	var redirected atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, "http://"+target.addr()+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(reg.Close)
	t.Run("download_hosts: only those hosts and ports", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.RegistryURL = reg.URL
		cfg.DownloadHosts = []string{"github.com", hostOf(t, reg.URL)}
		s := startStack(t, []string{root}, cfg, Options{})
		notAllowed := "download host " + target.addr() + " is not allowed: add it to download_hosts in config.yaml (allowed: github.com, " + hostOf(t, reg.URL) + ")"
		s.refused(t, FnSkillsDownload, attacks[0], rules.CodeForbidden, notAllowed)
		s.refused(t, FnSkillsDownload, attacks[1], rules.CodeForbidden, notAllowed)
		s.refused(t, FnSkillsDownload, attacks[2], rules.CodeForbidden, notAllowed)
		s.refused(t, FnSkillsDownload, attacks[3], rules.CodeForbidden, "download host 127.0.0.1:22 is not allowed")
		for repo, want := range map[string]string{
			// An allowed name in the user part still dials the host after '@'.
			"https://github.com@" + target.addr() + "/r.git": notAllowed,
			// A listed host without a port allows its default port only.
			"https://github.com:" + strconv.Itoa(target.port()) + "/r.git": "download host github.com:" + strconv.Itoa(target.port()) + " is not allowed",
			"ssh://github.com:2222/r.git":                                  "download host github.com:2222 is not allowed",
			// Forms git reads differently from a URL parser.
			"git@[" + target.addr() + "]:r.git": "needs a plain host name",
			"git@github.com/../x:r.git":         "needs a plain host name",
			"git@github.com":                    "needs a plain host name",
		} {
			code := rules.CodeForbidden
			if strings.Contains(want, "plain host name") {
				code = rules.CodeInvalidArguments
			}
			s.refused(t, FnSkillsDownload, map[string]any{"repo": repo, "skill": "victim"}, code, want)
		}
		// The registry is allowed; its redirect to the target is not followed.
		s.refused(t, FnSkillsDownload, map[string]any{"worker": "mailer"}, rules.CodeForbidden, notAllowed)
		if redirected.Load() == 0 {
			t.Fatal("the allowed registry was not asked")
		}
	})
	if n := target.dialsSoFar(t); n != 0 {
		t.Fatalf("the target was dialed %d times", n)
	}
	for rel, want := range map[string]string{"victim/SKILL.md": "# Kept", "mailer/send.md": "# Kept mailer"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !strings.Contains(string(b), want) {
			t.Fatalf("%s after refused downloads: %q %v", rel, b, err)
		}
	}
}

func TestDownloadHostsSetting(t *testing.T) {
	for _, bad := range []string{"https://github.com", "user@github.com", "github.com/x", "-oProxyCommand=x", "[github.com]:22x:1"} {
		if _, err := newHostAllowlist([]string{bad}); err == nil || !strings.Contains(err.Error(), "download_hosts: ") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	a, err := newHostAllowlist([]string{" GitHub.com ", "git.example:2222", "[::1]:8443", ""})
	if err != nil {
		t.Fatal(err)
	}
	for repo, ok := range map[string]bool{
		"https://github.com/a/b.git":        true,
		"https://GITHUB.COM:443/a/b.git":    true,
		"ssh://git@github.com/a/b.git":      true,
		"git@github.com:a/b.git":            true,
		"https://github.com:8443/a/b.git":   false,
		"ssh://git@git.example:2222/a.git":  true,
		"ssh://git@git.example/a.git":       false,
		"git@git.example:a.git":             false,
		"https://[::1]:8443/a.git":          true,
		"https://[::1]/a.git":               false,
		"https://evil.example/github.com":   false,
		"https://github.com.evil.example/x": false,
	} {
		if err := a.checkRepo(repo); (err == nil) != ok {
			t.Errorf("checkRepo(%q) = %v, want allowed=%v", repo, err, ok)
		}
	}
}
