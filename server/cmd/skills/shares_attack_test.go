package main

// One client cannot take a global cap from everyone (published bundles,
// blobs), over real sockets against the skills binary: each publisher
// (a connection, or every connection of a scoped token) holds at most its
// share of the bundle caps and may unpublish what it published, the admin
// token may unpublish anything, and one /rpc client's blobs never push
// out another's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

const adminToken = "admin-token-0123456789"

func unpublish(t *testing.T, c *iii.Client, payload map[string]any) (json.RawMessage, error) {
	t.Helper()
	return trigger(t, c, rules.FnUnpublishBundle, payload)
}

func TestAttackOnePublisherCannotTakeTheBundleCaps(t *testing.T) {
	s := startSPServer(t, "engine_tokens:\n  - name: acme\n    token: "+scopeAcmeToken+"\n    namespaces: [acme]\nskills_protocol:\n  published_max_bundles: 6\n",
		"--engine-token", scopeOperatorToken, "--admin-token", adminToken)
	attacker := connectWithToken(t, s.url, "attacker", scopeOperatorToken)
	for i := range 3 {
		if _, err := publishFiles(t, attacker, bundleFiles(fmt.Sprintf("flood.b%d", i), "1.0.0", "flood")); err != nil {
			t.Fatalf("flood %d: %v", i, err)
		}
	}
	_, err := publishFiles(t, attacker, bundleFiles("flood.b3", "1.0.0", "flood"))
	if err == nil || !strings.Contains(err.Error(), "has 3 bundle versions published, its share of the 6 this server keeps") ||
		!strings.Contains(err.Error(), rules.FnUnpublishBundle) {
		t.Fatalf("past the attacker's share: %v", err)
	}
	// A later publisher is not locked out.
	victim := connectWithToken(t, s.url, "victim", scopeOperatorToken)
	if _, err := publishFiles(t, victim, bundleFiles("victim.tool", "1.0.0", "victim")); err != nil {
		t.Fatalf("the victim publishing beside the flood: %v", err)
	}
	// Only a bundle's publisher, or the admin token, unpublishes it.
	_, err = unpublish(t, attacker, map[string]any{"name": "victim.tool"})
	wantForbidden(t, "the attacker unpublishing the victim's bundle", err, "every version of bundle victim.tool was published by another publisher")
	_, err = unpublish(t, attacker, map[string]any{"name": "victim.tool", "admin_token": "guessed-token"})
	wantForbidden(t, "a wrong admin token", err, "admin_token is not the registry's admin token")
	if out, err := unpublish(t, attacker, map[string]any{"name": "flood.b0"}); err != nil || string(out) != `{"name":"flood.b0","versions":["1.0.0"]}` {
		t.Fatalf("the attacker unpublishing its own: %s %v", out, err)
	}
	// Its share is free again.
	if _, err := publishFiles(t, attacker, bundleFiles("flood.b3", "1.0.0", "flood")); err != nil {
		t.Fatalf("publishing after an unpublish: %v", err)
	}
	if status, resp := rpcCall(t, s.rpcURL, "describe_skill", map[string]any{"name": "flood.b0"}); status != http.StatusOK || resp["error"] == nil {
		t.Fatalf("an unpublished bundle is served: %s", resp["result"])
	}

	// A scoped token is one publisher across connections and restarts.
	acme := connectWithToken(t, s.url, "acme", scopeAcmeToken)
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if _, err := publishFiles(t, acme, bundleFiles("acme.sync", v, "acme")); err != nil {
			t.Fatal(err)
		}
	}
	s.restart()
	acme = connectWithToken(t, s.url, "acme", scopeAcmeToken)
	if out, err := unpublish(t, acme, map[string]any{"name": "acme.sync", "version": "1.0.0"}); err != nil || !strings.Contains(string(out), `"versions":["1.0.0"]`) {
		t.Fatalf("acme unpublishing after a restart: %s %v", out, err)
	}
	// A connection is one publisher while it lives: after a restart only
	// the admin token removes the attacker's old bundles.
	attacker = connectWithToken(t, s.url, "attacker", scopeOperatorToken)
	_, err = unpublish(t, attacker, map[string]any{"name": "flood.b1"})
	wantForbidden(t, "a new connection unpublishing the old one's bundle", err, "was published by another publisher")
	if out, err := unpublish(t, attacker, map[string]any{"name": "flood.b1", "admin_token": adminToken}); err != nil || !strings.Contains(string(out), `"versions":["1.0.0"]`) {
		t.Fatalf("unpublishing with the admin token: %s %v", out, err)
	}
	_, err = unpublish(t, attacker, map[string]any{"name": "flood.b9"})
	wantRefusal(t, "NOT_FOUND", "unpublishing a bundle never published", err, "bundle flood.b9 is not published here")
	for name, marker := range map[string]string{"victim.tool": "victim", "acme.sync": "acme", "flood.b2": "flood"} {
		if r := executeBundle(t, s.rpcURL, name); r.Output.Marker != marker {
			t.Fatalf("%s after the unpublishes: %+v", name, r.Output)
		}
	}
}

// postFrom posts one /rpc request from loopback address ip.
func postFrom(t *testing.T, url, ip, method string, params any) (int, map[string]json.RawMessage) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp.StatusCode, out
}

func TestAttackOneClientCannotPushOutOthersBlobs(t *testing.T) {
	s := startSPServer(t, "skills_protocol:\n  blob_store_max_bytes: 16777216\n") // 8 MiB per client
	create := func(ip, fill string) string {
		t.Helper()
		_, out := postFrom(t, s.rpcURL, ip, "create_blob", map[string]any{"content": strings.Repeat(fill, 2<<20), "kind": "text/plain"})
		var r struct {
			BlobID string `json:"blob_id"`
		}
		if json.Unmarshal(out["result"], &r) != nil || r.BlobID == "" {
			t.Fatalf("create_blob from %s: %s", ip, out["error"])
		}
		return r.BlobID
	}
	readable := func(id string) bool {
		_, out := postFrom(t, s.rpcURL, "127.0.0.9", "read_blob", map[string]any{"blob_id": id})
		return out["error"] == nil
	}
	victim := create("127.0.0.2", "v")
	var flood []string
	for range 12 { // 24 MiB from one client
		flood = append(flood, create("127.0.0.1", "a"))
	}
	s.restart()
	if !readable(victim) {
		t.Fatal("one client's 24 MiB of blobs pushed out another client's blob")
	}
	for i, id := range flood {
		if want := i >= 8; readable(id) != want {
			t.Fatalf("flood blob %d readable: %v; want only the 4 newest (its 8 MiB share)", i, !want)
		}
	}
}
