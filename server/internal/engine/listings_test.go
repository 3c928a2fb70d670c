package engine

import (
	"regexp"
	"strings"
	"testing"
)

// TestListingAnswersPinned pins the exact bytes of every engine listing
// answer for one fixed registration: field order, nulls and omitted empty
// fields are part of the contract the directory, MCP, the web page and
// other engines' consumers read, so a change of the Go types behind them
// must not change a byte.
func TestListingAnswersPinned(t *testing.T) {
	e := startEngine(t, Config{})
	p := dialWorker(t, e.URL())
	p.result("engine::workers::register", map[string]any{"name": "pub", "runtime": "go", "version": "1.2.3",
		"os": "linux", "pid": 7, "description": "the publisher", "isolation": "none"})
	p.register("pub::a", map[string]any{"description": "First <a&b>", "request_format": map[string]any{"type": "object"},
		"response_format": map[string]any{"type": "string"}, "metadata": map[string]any{"owner": "me"}})
	p.register("pub::b", nil)
	p.send(map[string]any{"type": "registertriggertype", "id": "pub::on-x", "description": "X changes",
		"trigger_request_format": map[string]any{"type": "object"}, "call_request_format": map[string]any{"type": "array"}})
	p.send(map[string]any{"type": "registertriggertype", "id": "pub::bare"})
	p.sync()
	q := dialWorker(t, e.URL())
	q.result("engine::workers::register", map[string]any{"name": "quiet", "pid": 9})
	q.register("quiet::cb", nil)
	q.send(map[string]any{"type": "registertrigger", "id": "t2", "trigger_type": "pub::on-x", "function_id": "quiet::cb",
		"config": map[string]any{"filter": strings.Repeat("ab", 70)}})
	q.send(map[string]any{"type": "registertrigger", "id": "t1", "trigger_type": "pub::on-x", "function_id": "pub::b",
		"config": map[string]any{}})
	q.sync()
	p.expect("registertrigger")
	p.expect("registertrigger")

	// Worker ids are fresh UUIDs and connected_at_ms the clock: both are
	// replaced before comparing; everything else is fixed.
	connectedAt := regexp.MustCompile(`"connected_at_ms":\d+`)
	norm := func(raw []byte) string {
		s := strings.NewReplacer(p.id, "<P>", q.id, "<Q>").Replace(string(raw))
		return connectedAt.ReplaceAllString(s, `"connected_at_ms":0`)
	}
	long := strings.Repeat("ab", 70)
	summary := `{\"filter\":\"` + strings.Repeat("ab", 54) + `…`
	for _, c := range []struct {
		fn   string
		in   any
		want string
	}{
		{"engine::workers::list", nil, `{"workers":[` +
			`{"id":"<P>","name":"pub","description":"the publisher","runtime":"go","version":"1.2.3","os":"linux","pid":7,"status":"connected","function_count":2,"connected_at_ms":0,"active_invocations":0,"namespace":"default","isolation":"none","ip_address":"127.0.0.1"},` +
			`{"id":"<Q>","name":"quiet","description":null,"runtime":"unknown","version":null,"os":null,"pid":9,"status":"connected","function_count":1,"connected_at_ms":0,"active_invocations":0,"namespace":"default","isolation":null,"ip_address":"127.0.0.1"}]}`},
		{"engine::functions::list", map[string]any{"prefix": "pub::"}, `{"functions":[` +
			`{"function_id":"pub::a","namespace":"default","worker_name":"pub","description":"First \u003ca\u0026b\u003e","request_format":{"type":"object"},"response_format":{"type":"string"},"metadata":{"owner":"me"}},` +
			`{"function_id":"pub::b","namespace":"default","worker_name":"pub","request_format":null,"response_format":null}]}`},
		{"engine::functions::info", map[string]any{"function_id": "pub::a"},
			`{"function_id":"pub::a","namespace":"default","worker_name":"pub","description":"First \u003ca\u0026b\u003e","request_schema":{"type":"object"},"response_schema":{"type":"string"},"metadata":{"owner":"me"},"registered_triggers":[]}`},
		{"engine::functions::info", map[string]any{"function_ids": []string{"pub::b", "nope", "quiet::cb"}}, `{"functions":[` +
			`{"function_id":"pub::b","namespace":"default","worker_name":"pub","registered_triggers":[{"id":"t1","trigger_type":"pub::on-x","config":{}}]},` +
			`{"error":"not_found","function_id":"nope"},` +
			`{"function_id":"quiet::cb","namespace":"default","worker_name":"quiet","registered_triggers":[{"id":"t2","trigger_type":"pub::on-x","config":{"filter":"` + long + `"}}]}]}`},
		{"engine::triggers::list", map[string]any{"prefix": "pub::"},
			`{"triggers":[{"id":"pub::bare","namespace":"default","worker_name":"pub","description":""},` +
				`{"id":"pub::on-x","namespace":"default","worker_name":"pub","description":"X changes"}]}`},
		{"engine::triggers::info", map[string]any{"id": "pub::on-x"},
			`{"id":"pub::on-x","namespace":"default","worker_name":"pub","description":"X changes","configuration_schema":{"type":"object"},"request_schema":{"type":"array"},"instance_count":2,"provider_worker_id":"<P>"}`},
		{"engine::triggers::info", map[string]any{"id": "pub::bare"},
			`{"id":"pub::bare","namespace":"default","worker_name":"pub","description":"","instance_count":0,"provider_worker_id":"<P>"}`},
		{"engine::registered-triggers::list", map[string]any{"trigger_type": "pub::on-x"}, `{"registered_triggers":[` +
			`{"id":"t1","trigger_type":"pub::on-x","function_id":"pub::b","worker_name":"quiet","config":{},"config_summary":"{}"},` +
			`{"id":"t2","trigger_type":"pub::on-x","function_id":"quiet::cb","worker_name":"quiet","config":{"filter":"` + long + `"},"config_summary":"` + summary + `"}]}`},
	} {
		if got := norm(p.result(c.fn, c.in)); got != c.want {
			t.Errorf("%s %v answered\n%s\nwant\n%s", c.fn, c.in, got, c.want)
		}
	}
}
