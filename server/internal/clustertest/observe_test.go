package clustertest

// Observability across registries sharing state on two real engines:
// read counts sum over the nodes, the change feed is one with the same
// cursors everywhere, each change is delivered once (by the node that
// made it), and the propagation lag is measured.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// clusterHooks receives the webhooks of every node, verifying each the
// Standard Webhooks way.
type clusterHooks struct {
	key []byte
	srv *httptest.Server

	mu    sync.Mutex
	byID  map[string]int // webhook-id → deliveries acknowledged
	types []string       // "<type> <id> <cursor>" in arrival order
	bad   int
}

func newClusterHooks(t testing.TB) (*clusterHooks, string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	h := &clusterHooks{key: b, byID: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mac := hmac.New(sha256.New, h.key)
		fmt.Fprintf(mac, "%s.%s.", id, r.Header.Get("webhook-timestamp"))
		mac.Write(body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if r.Header.Get("webhook-signature") != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
			h.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var d struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(body, &d)
		h.byID[id]++
		h.types = append(h.types, fmt.Sprintf("%s %v %v", d.Type, d.Data["id"], d.Data["cursor"]))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h, "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// observedConfig is a registry config with fast usage flushes and h as
// every node's webhook receiver.
func observedConfig(t testing.TB, h *clusterHooks, secret string) string {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("usage: {flush_interval: 1s}\nwebhooks:\n  - {url: %q, secret: %s}\n", h.srv.URL+"/hooks", secret)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type feedPage struct {
	Changes []struct {
		Cursor int64  `json:"cursor"`
		Type   string `json:"type"`
		ID     string `json:"id"`
		Node   string `json:"node"`
	} `json:"changes"`
	Next int64 `json:"next"`
}

func TestObservabilityAcrossEnginesOnRedis(t *testing.T) {
	hooks, secret := newClusterHooks(t)
	c := newCluster(t, "--config", observedConfig(t, hooks, secret))
	a, b := c.nodes[0], c.nodes[1]

	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "obs/read", "skill": "# read\n"}, nil)
	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "obs/one", "skill": "# one\n"}, nil)
	testutil.Eventually(t, 20*time.Second, "b lists obs/one", func() bool { return b.lists(rules.FnSkillsList, "skills", "id", "obs/one") })
	b.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "obs/one", "skill": "# one, again\n"}, nil)
	b.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "obs/one", "label": "prod", "version": 1}, nil)
	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "obs/two", "skill": "# two\n"}, nil)
	a.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "obs/two"}, nil)

	t.Run("reads sum over the nodes", func(t *testing.T) {
		testutil.Eventually(t, 20*time.Second, "b lists obs/read", func() bool { return b.lists(rules.FnSkillsList, "skills", "id", "obs/read") })
		for range 3 {
			a.fetchSkill("iii://obs/read")
		}
		for range 2 {
			b.fetchSkill("iii://obs/read")
		}
		for _, n := range c.nodes {
			testutil.Eventually(t, 30*time.Second, "node "+n.name+" sums the reads of both nodes", func() bool {
				var u usageOf
				return n.call(rules.FnSkillsUsage, map[string]string{"id": "obs/read"}, &u) == nil &&
					fmt.Sprint(u.byClient("1")) == "map[cluster-test-a:3 cluster-test-b:2]"
			})
		}
	})

	t.Run("one feed, the same cursors on every node", func(t *testing.T) {
		var pa, pb feedPage
		a.mustCall(t, rules.FnSkillsChanges, map[string]any{"limit": 1000}, &pa)
		b.mustCall(t, rules.FnSkillsChanges, map[string]any{"limit": 1000}, &pb)
		if len(pa.Changes) != 6 || fmt.Sprint(pa) != fmt.Sprint(pb) {
			t.Fatalf("feeds differ or miss changes:\n a %+v\n b %+v", pa, pb)
		}
		var got []string
		for i, ch := range pa.Changes {
			if ch.Cursor != int64(i+1) {
				t.Fatalf("change %d has cursor %d", i, ch.Cursor)
			}
			got = append(got, ch.Type+" "+ch.ID)
		}
		if want := "register obs/read; register obs/one; version obs/one; label obs/one; register obs/two; unregister obs/two"; strings.Join(got, "; ") != want {
			t.Fatalf("feed %s; want %s", strings.Join(got, "; "), want)
		}
		nodeA, nodeB := pa.Changes[0].Node, pa.Changes[2].Node
		for i, ch := range pa.Changes {
			if want := map[bool]string{true: nodeB, false: nodeA}[i == 2 || i == 3]; ch.Node != want || nodeA == nodeB {
				t.Fatalf("change %d was made on node %q; the version and label were made on b, the rest on a: %+v", i+1, ch.Node, pa.Changes)
			}
		}
		var next feedPage
		b.mustCall(t, rules.FnSkillsChanges, map[string]any{"after": 4}, &next)
		if len(next.Changes) != 2 || next.Changes[0].Cursor != 5 || next.Next != 6 {
			t.Fatalf("after 4: %+v", next)
		}
	})

	t.Run("each change delivered once, by the node that made it", func(t *testing.T) {
		testutil.Eventually(t, 30*time.Second, "six deliveries", func() bool {
			hooks.mu.Lock()
			defer hooks.mu.Unlock()
			return len(hooks.types) >= 6
		})
		time.Sleep(2 * time.Second) // room for a duplicate to show, were one sent
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		if len(hooks.types) != 6 || hooks.bad != 0 {
			t.Fatalf("deliveries %v (%d refused); want the 6 changes once each", hooks.types, hooks.bad)
		}
		for id, n := range hooks.byID {
			if n != 1 {
				t.Fatalf("webhook %s delivered %d times", id, n)
			}
		}
	})

	t.Run("propagation lag is measured", func(t *testing.T) {
		fams := testutil.Scrape(t, "http://"+b.mcpAddr+"/metrics", "")
		if n, ok := testutil.Sample(fams, "skills_cluster_propagation_lag_seconds", nil); !ok || n < 1 {
			t.Fatalf("b measured the lag of %v changes made on a; want at least one", n)
		}
		if n, _ := testutil.Sample(fams, "skills_calls_total", map[string]string{"function": rules.FnSkillsChanges, "surface": "iii", "code": "ok"}); n < 1 {
			t.Fatalf("b counted %v skills::changes calls", n)
		}
	})
}

// usageOf is a skills::usage answer.
type usageOf struct {
	Skills []struct {
		Version  string            `json:"version"`
		ByClient map[string]uint64 `json:"by_client"`
	} `json:"skills"`
}

// byClient is the reads of version by client.
func (u usageOf) byClient(version string) map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range u.Skills {
		if s.Version == version {
			for k, v := range s.ByClient {
				out[k] += v
			}
		}
	}
	return out
}
