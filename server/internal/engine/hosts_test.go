package engine

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A worker reaching the engine through a proxy or under a DNS name is let
// in when that name is listed; other names are refused with a message that
// names the setting.
func TestAllowedHostsOpenTheWorkerSocket(t *testing.T) {
	e := startEngine(t, Config{AllowedHosts: []string{"iii.example.com", "*.workers.example"},
		AllowedHostsSetting: "--engine-allow-host"})
	url := e.URL()
	for host, want := range map[string]int{
		"iii.example.com":         http.StatusSwitchingProtocols,
		"iii.example.com:443":     http.StatusSwitchingProtocols,
		"eu.workers.example:8080": http.StatusSwitchingProtocols,
		"workers.example":         http.StatusForbidden,
		"rebind.evil.example":     http.StatusForbidden,
	} {
		if got := dialStatus(t, url, http.Header{"Host": {host}}); got != want {
			t.Errorf("Host %s: status %d; want %d", host, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(url, "ws://", "http://", 1)+"/", nil)
	req.Host = "rebind.evil.example"
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `Host "rebind.evil.example" is not a name this server answers to`) ||
		!strings.Contains(string(body), "--engine-allow-host") {
		t.Errorf("refusal body = %q", body)
	}
}

// The engine's probes answer without a token, under any Host, on the
// worker socket's port.
func TestEngineProbes(t *testing.T) {
	e := startEngine(t, Config{Token: "s3cret"})
	base := strings.Replace(e.URL(), "ws://", "http://", 1)
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Host = "10.1.2.3:49134" // a load balancer probing by IP
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s = %d %q; want 200 %q", path, resp.StatusCode, body, want)
		}
	}
}
