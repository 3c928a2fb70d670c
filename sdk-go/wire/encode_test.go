package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// EncodeMessage must produce JSON that decodes to the same Message as the
// input, and write the keys each frame type requires.
func TestEncodeMessageRoundTrips(t *testing.T) {
	frames := []Message{
		{Type: TypeInvokeFunction, InvocationID: "6f1c0000-0000-4000-8000-000000000000", FunctionID: "skills::register",
			Data: json.RawMessage(`{"id":"x","skill":"# X\n\"quoted\" \u2028 é"}`), Action: &Action{Type: ActionEnqueue, Queue: "q"},
			Metadata: json.RawMessage(`{"m":1}`), Traceparent: "00-abc", Namespace: "default", TriggerID: "binding-1"},
		{Type: TypeInvocationResult, InvocationID: "i", FunctionID: "f", Result: json.RawMessage(`[1,2.50,"s"]`)},
		{Type: TypeInvocationResult, InvocationID: "i", FunctionID: "f", Error: &ErrorBody{Code: "c", Message: "line\nbreak\t\"q\" \x01", Stacktrace: "st"}},
		{Type: TypeRegisterFunction, ID: "a::b", Description: "d <html> & stuff", RequestFormat: json.RawMessage(`{"type":"object"}`), ResponseFormat: json.RawMessage(`{}`)},
		{Type: TypeRegisterTrigger, ID: "t", TriggerType: "skills::on-change", FunctionID: "f", Config: json.RawMessage(`{"scope":"s"}`)},
		{Type: TypeRegisterTriggerType, ID: "tt", Description: "x", CallRequestFormat: json.RawMessage(`{}`)},
		{Type: TypeWorkerRegistered, WorkerID: "w", ReattachToken: "r"},
		{Type: TypeReattach, PreviousWorkerID: "w", ReattachToken: "r"},
		{Type: TypeRegistrationRejected, Code: "WORKER_NAMESPACE_CONFLICT", Namespace: "n", WorkerName: "wn", OwnerWorkerID: "o"},
		{Type: TypeRegisterService, ID: "s", Name: "n", ParentServiceID: "p"},
	}
	for _, in := range frames {
		out := EncodeMessage(&in)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON for %s: %s", in.Type, out)
		}
		var got Message
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		// Compare raw fields by meaning, not bytes.
		norm := func(m Message) Message {
			for _, p := range []*json.RawMessage{&m.Data, &m.Result, &m.RequestFormat, &m.ResponseFormat, &m.Config, &m.Metadata, &m.CallRequestFormat} {
				if len(*p) > 0 {
					var v any
					_ = json.Unmarshal(*p, &v)
					*p, _ = json.Marshal(v)
				}
			}
			return m
		}
		if !reflect.DeepEqual(norm(got), norm(in)) {
			t.Fatalf("round trip of %s:\n got %+v\nwant %+v\nwire %s", in.Type, got, in, out)
		}
	}
}

func TestEncodeMessageRequiredKeys(t *testing.T) {
	cases := []struct {
		m    Message
		want []string
	}{
		{Message{Type: TypeInvokeFunction, FunctionID: "f"}, []string{`"data":{}`}},
		{Message{Type: TypeRegisterTrigger, ID: "t", TriggerType: "x", FunctionID: "f"}, []string{`"config":{}`}},
		{Message{Type: TypeInvocationResult, InvocationID: "i"}, []string{`"function_id":""`}},
		{Message{Type: TypeTriggerRegistrationResult}, []string{`"id":""`, `"trigger_type":""`, `"function_id":""`}},
		{Message{Type: TypeRegisterTriggerType, ID: "x"}, []string{`"description":""`}},
	}
	for _, c := range cases {
		out := string(EncodeMessage(&c.m))
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Fatalf("%s frame %s lacks %s", c.m.Type, out, w)
			}
		}
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f", "é ✓ 😀", "\u2028\u2029", "bad \xff utf8", "<&>"} {
		got := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s", s, got)
		}
		var want string
		ref, _ := json.Marshal(s)
		_ = json.Unmarshal(ref, &want)
		if back != want {
			t.Fatalf("%q: decoded %q, encoding/json gives %q", s, back, want)
		}
	}
}

func BenchmarkEncodeMessage(b *testing.B) {
	body, _ := json.Marshal(map[string]string{"text": strings.Repeat("a line of markdown\n", 120)})
	m := Message{Type: TypeInvocationResult, InvocationID: "6f1c0000-0000-4000-8000-000000000000", FunctionID: "skill::fetch", Result: body}
	b.Run("EncodeMessage", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = EncodeMessage(&m)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = json.Marshal(&m)
		}
	})
}
