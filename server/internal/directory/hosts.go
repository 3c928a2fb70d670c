package directory

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Downloads dial only the hosts the operator lists in download_hosts: a
// download names its repository (or the registry names its worker), so
// without this list any caller of directory::skills::download could make
// the server open TLS and SSH connections to host:ports of its choosing.

// SettingDownloadHosts names the setting in every refusal.
const SettingDownloadHosts = "download_hosts"

var (
	// errDownloadsOff: the allowlist is empty (the default).
	errDownloadsOff = errors.New("downloads are off: " + SettingDownloadHosts + " in config.yaml lists no host " +
		"(list the hosts downloads may reach, e.g. " + SettingDownloadHosts + ": [github.com, api.workers.iii.dev])")
)

// hostAllowlist holds canonical "host:port" entries. An entry without a
// port allows the scheme's default port only (443 for https, 22 for ssh).
type hostAllowlist struct {
	exact    map[string]bool // host:port
	anyPort  map[string]bool // host given without a port: default ports only
	rendered string          // for messages
}

// CheckDownloadHosts refuses a malformed download_hosts (an entry that is
// not host or host:port) with what was expected, as Register would; a
// config check calls it before anything starts.
func CheckDownloadHosts(entries []string) error {
	_, err := newHostAllowlist(entries)
	return err
}

func newHostAllowlist(entries []string) (hostAllowlist, error) {
	a := hostAllowlist{exact: map[string]bool{}, anyPort: map[string]bool{}}
	var shown []string
	for _, raw := range entries {
		e := strings.ToLower(strings.TrimSpace(raw))
		if e == "" {
			continue
		}
		if strings.Contains(e, "://") || strings.ContainsAny(e, "/@ ") {
			return hostAllowlist{}, fmt.Errorf("%s: %q is not a host name: give host or host:port (github.com, git.example:2222)", SettingDownloadHosts, raw)
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			if !plainHost(h) || p == "" {
				return hostAllowlist{}, fmt.Errorf("%s: %q is not host:port", SettingDownloadHosts, raw)
			}
			a.exact[net.JoinHostPort(h, p)] = true
		} else {
			h := strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
			if !plainHost(h) {
				return hostAllowlist{}, fmt.Errorf("%s: %q is not a host name", SettingDownloadHosts, raw)
			}
			a.anyPort[h] = true
		}
		shown = append(shown, e)
	}
	a.rendered = strings.Join(shown, ", ")
	return a, nil
}

func (a hostAllowlist) empty() bool { return len(a.exact) == 0 && len(a.anyPort) == 0 }

// check allows host:port (port "" = the scheme's default, given as def).
func (a hostAllowlist) check(host, port, def string) error {
	if a.empty() {
		return hostRefused{errDownloadsOff}
	}
	host = strings.ToLower(host)
	if port == "" {
		port = def
	}
	if a.exact[net.JoinHostPort(host, port)] || (port == def && a.anyPort[host]) {
		return nil
	}
	return hostRefused{fmt.Errorf("download host %s is not allowed: add it to %s in config.yaml (allowed: %s)",
		net.JoinHostPort(host, port), SettingDownloadHosts, a.rendered)}
}

// hostRefused is the operator's download_hosts refusing a host: a
// refusal the caller cannot get past by asking again (refusal).
type hostRefused struct{ err error }

func (h hostRefused) Error() string { return h.err.Error() }
func (h hostRefused) Unwrap() error { return h.err }

// plainHost: a DNS name or an IP address, nothing a URL parser or git
// could read another way (no brackets, '@', '/', ':' outside IPv6, spaces).
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	if ip := net.ParseIP(h); ip != nil {
		return true
	}
	if strings.HasPrefix(h, "-") || strings.HasPrefix(h, ".") {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// checkURL allows an http(s) URL's host (the registry, and every redirect).
func (a hostAllowlist) checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("download URL %q has no host", raw)
	}
	def := "443"
	if u.Scheme == "http" {
		def = "80"
	}
	if !plainHost(u.Hostname()) {
		return fmt.Errorf("download URL %q: %q is not a plain host name", raw, u.Hostname())
	}
	return a.check(u.Hostname(), u.Port(), def)
}

// checkRepo allows the host a git repository URL dials: https://host[:port]/…,
// ssh://[user@]host[:port]/… or git@host:path (scp-like, port 22). Forms
// git would read differently from this parser (a bracketed
// [host:port], a '/' before the ':' that makes git see a local path, no
// ':' at all) are refused.
func (a hostAllowlist) checkRepo(repo string) error {
	if rest, ok := strings.CutPrefix(repo, "git@"); ok {
		host, _, found := strings.Cut(rest, ":")
		if !found || !plainHost(host) {
			return fmt.Errorf("repo %q: git@HOST:PATH needs a plain host name before the ':' (use ssh://git@host:port/path for another port)", repo)
		}
		return a.check(host, "", "22")
	}
	u, err := url.Parse(repo)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("repo %q is not a URL with a host", repo)
	}
	if !plainHost(u.Hostname()) {
		return fmt.Errorf("repo %q: %q is not a plain host name", repo, u.Hostname())
	}
	def := "443"
	if u.Scheme == "ssh" {
		def = "22"
	}
	return a.check(u.Hostname(), u.Port(), def)
}
