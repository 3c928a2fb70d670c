package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestScanResultFrame(t *testing.T) {
	big := strings.Repeat(`line with \"quotes\", {braces} and [brackets]\\n`, 1000)
	for _, tc := range []struct {
		name, frame       string
		id, fn, res, eraw string
	}{
		{"client order", `{"type":"invocationresult","invocation_id":"a1","function_id":"f::g","result":{"x":[1,2,{"y":"}"}]}}`,
			"a1", "f::g", `{"x":[1,2,{"y":"}"}]}`, ""},
		{"other order and spaces", " {\n \"result\" : \"text\" , \"invocation_id\" : \"a2\" ,\"type\":\"invocationresult\"}\n",
			"a2", "", `"text"`, ""},
		{"escapes in a string", `{"type":"invocationresult","invocation_id":"a3","result":"` + big + `"}`,
			"a3", "", `"` + big + `"`, ""},
		{"backslash before the closing quote", `{"type":"invocationresult","invocation_id":"a4","result":["\\","a\\\"b"]}`,
			"a4", "", `["\\","a\\\"b"]`, ""},
		{"error body", `{"type":"invocationresult","invocation_id":"a5","function_id":"f","error":{"code":"c","message":"m"}}`,
			"a5", "f", "", `{"code":"c","message":"m"}`},
		{"null error and scalar result", `{"type":"invocationresult","invocation_id":"a6","result":-1.5e3,"error":null}`,
			"a6", "", `-1.5e3`, ""},
		{"unknown keys", `{"type":"invocationresult","traceparent":"00-x","invocation_id":"a7","extra":{"k":[true,false,null]},"result":true}`,
			"a7", "", `true`, ""},
	} {
		f, ok := ScanResultFrame([]byte(tc.frame))
		if !ok {
			t.Errorf("%s: not scanned", tc.name)
			continue
		}
		if f.InvocationID != tc.id || f.FunctionID != tc.fn || string(f.Result) != tc.res || string(f.Error) != tc.eraw {
			t.Errorf("%s: got %+v", tc.name, f)
		}
	}
}

// Everything the scanner refuses goes down the full decoding path.
func TestScanResultFrameRefuses(t *testing.T) {
	for _, frame := range []string{
		``, `   `, `[]`, `{}`, `{"type":"invocationresult"}`,
		`{"type":"invokefunction","invocation_id":"a","data":{}}`,
		`{"invocation_id":"a","result":1}`,
		`{"type":"invocationresult","invocation_id":"a\u0031","result":1}`,
		`{"type":"invocationresult","invocation_id":"a","result":{"open":1}`,
		`{"type":"invocationresult","invocation_id":"a","result":"unterminated}`,
		`{"type":"invocationresult","invocation_id":"a","result":1} trailing`,
		`{"type":"invocationresult","invocation_id":"a","result":1,}`,
		`{"type":"invocationresult","invocation_id":"a","result"1}`,
		`{"type":"invocationresult","invocation_id":"a","result":}`,
		`{"type":"invocationresult","invocation_id":"a","result":1`,
		`{"type":"invocationresult","invocation_id":7,"result":1}`,
	} {
		if f, ok := ScanResultFrame([]byte(frame)); ok {
			t.Errorf("%q scanned as %+v", frame, f)
		}
	}
}

// The scanner agrees with encoding/json on every frame both accept, and
// never panics.
func FuzzScanResultFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"invocationresult","invocation_id":"a","function_id":"f","result":{"t":"x\"y"}}`,
		`{"type":"invocationresult","invocation_id":"b","error":{"code":"c","message":"m"}}`,
		`{"result":[1,"]",{}],"type":"invocationresult","invocation_id":"c"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := ScanResultFrame(data)
		if !ok {
			return
		}
		var m Message
		if json.Unmarshal(data, &m) != nil {
			return // not JSON: the scanner only locates values
		}
		if m.Type != TypeInvocationResult || m.InvocationID != got.InvocationID || m.FunctionID != got.FunctionID {
			t.Fatalf("scanned %+v, decoded %+v", got, m)
		}
		if len(got.Result) > 0 && !bytes.Equal(compactJSON(t, got.Result), compactJSON(t, m.Result)) {
			t.Fatalf("result %s, decoded %s", got.Result, m.Result)
		}
	})
}

func compactJSON(t *testing.T, raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.Bytes()
}

// ScanInvokeFrame finds what encoding/json finds, without decoding data.
func TestScanInvokeFrame(t *testing.T) {
	for _, frame := range []string{
		`{"type":"invokefunction","invocation_id":"i1","function_id":"skills::register","data":{"id":"a","skill":"# A \"quoted\" }{ body"}}`,
		` { "function_id" : "a::b" , "data" : [1, {"x": "]"}], "type" : "invokefunction", "metadata": {"m": 1}, "traceparent": "00-ab", "baggage": "k=v", "trigger_id": "b-1", "extra": {"ignored": true} } `,
		`{"type":"invokefunction","function_id":"a::b","action":{"type":"void"},"data":null,"metadata":null}`,
		`{"type":"invokefunction","function_id":"a::b","invocation_id":"i2","action":{"type":"enqueue","queue":"q"}}`,
	} {
		f, ok := ScanInvokeFrame([]byte(frame))
		if !ok {
			t.Fatalf("ScanInvokeFrame(%s) refused", frame)
		}
		var m Message
		if err := json.Unmarshal([]byte(frame), &m); err != nil {
			t.Fatal(err)
		}
		if f.InvocationID != m.InvocationID || f.FunctionID != m.FunctionID || f.Traceparent != m.Traceparent ||
			f.Baggage != m.Baggage || f.TriggerID != m.TriggerID || !reflect.DeepEqual(f.Action, m.Action) ||
			!jsonSame(f.Data, m.Data) || !jsonSame(f.Metadata, m.Metadata) {
			t.Errorf("ScanInvokeFrame(%s) = %+v; encoding/json reads %+v", frame, f, m)
		}
	}
}

func TestScanInvokeFrameRefuses(t *testing.T) {
	for _, frame := range []string{
		`{"type":"invocationresult","invocation_id":"i","function_id":"a"}`,
		`{"type":"invokefunction","data":{}}`,
		`{"type":"invokefunction","function_id":"a\u003a:b"}`,
		`{"type":"invokefunction","function_id":"a::b","data":{"x":1}`,
		`{"type":"invokefunction","function_id":"a::b"} trailing`,
		`{"type":"invokefunction","function_id":"a::b","action":{"type":5}}`,
		`[]`, ``, `{}`,
	} {
		if f, ok := ScanInvokeFrame([]byte(frame)); ok {
			t.Errorf("ScanInvokeFrame(%s) = %+v; want a refusal (full decoding)", frame, f)
		}
	}
}

// jsonSame compares two raw values as JSON (nil and null are the same).
func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 {
		if json.Unmarshal(a, &x) != nil {
			return false
		}
	}
	if len(b) > 0 {
		if json.Unmarshal(b, &y) != nil {
			return false
		}
	}
	return reflect.DeepEqual(x, y)
}
