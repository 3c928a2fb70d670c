package skills

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type sendEmailArgs struct {
	To      string `json:"to" jsonschema:"description=Recipient address"`
	Subject string `json:"subject" jsonschema_description:"Subject line"`
	Urgent  *bool  `json:"urgent" jsonschema:"description=Mark as urgent"`
}

type Common struct {
	Locale string `json:"locale,omitempty" jsonschema:"description=Language\\, e.g. en"`
}

type mixedArgs struct {
	Common
	Count   int     `json:"count"`
	Ratio   float64 `json:"ratio,omitempty"`
	Small   int8    `json:"small,omitempty"`
	Size    uint16  `json:"size,omitempty"`
	Forced  string  `json:"forced,omitempty" jsonschema:"required"`
	Ignored string  `json:"-"`
	hidden  string  //nolint:unused // unexported fields are not arguments
	Plain   bool
}

func TestDeriveArguments(t *testing.T) {
	got, err := ArgumentsOf[sendEmailArgs]()
	if err != nil {
		t.Fatal(err)
	}
	want := []PromptArgument{
		{Name: "to", Description: "Recipient address", Required: true},
		{Name: "subject", Description: "Subject line", Required: true},
		{Name: "urgent", Description: "Mark as urgent", Required: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	b, _ := json.Marshal(got)
	if string(b) != `[{"name":"to","description":"Recipient address","required":true},{"name":"subject","description":"Subject line","required":true},{"name":"urgent","description":"Mark as urgent","required":false}]` {
		t.Fatalf("wire form %s", b)
	}

	got, err = ArgumentsOf[mixedArgs]()
	if err != nil {
		t.Fatal(err)
	}
	want = []PromptArgument{
		{Name: "locale", Description: "Language, e.g. en"},
		{Name: "count", Required: true},
		{Name: "ratio"},
		{Name: "small"},
		{Name: "size"},
		{Name: "forced", Required: true},
		{Name: "Plain", Required: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	if got, err := ArgumentsOf[struct{}](); err != nil || len(got) != 0 {
		t.Fatalf("no arguments: %v %v", got, err)
	}
	if got, err := ArgumentsOf[*sendEmailArgs](); err != nil || len(got) != 3 {
		t.Fatalf("pointer to struct: %v %v", got, err)
	}
}

func TestDeriveArgumentsRefusesUnsendableTypes(t *testing.T) {
	type withSlice struct {
		Tags []string `json:"tags"`
	}
	if _, err := ArgumentsOf[withSlice](); err == nil || !strings.Contains(err.Error(), `prompt argument "tags" has type []string`) {
		t.Fatalf("got %v", err)
	}
	if _, err := ArgumentsOf[string](); err == nil || !strings.Contains(err.Error(), "must be a struct") {
		t.Fatalf("got %v", err)
	}
}

func decodeInto[T any](t *testing.T, data string) (T, error) {
	t.Helper()
	specs, err := deriveArguments(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	var v T
	err = decodeArguments("p", specs, json.RawMessage(data), &v)
	return v, err
}

func TestDecodeArgumentsConvertsMCPStrings(t *testing.T) {
	v, err := decodeInto[mixedArgs](t, `{"count":"42","ratio":"2.5","small":"-8","size":"65535","forced":"x","Plain":"true","locale":"en","_caller_worker_id":"w1","extra":[1]}`)
	if err != nil {
		t.Fatal(err)
	}
	if v.Count != 42 || v.Ratio != 2.5 || v.Small != -8 || v.Size != 65535 || v.Forced != "x" || !v.Plain || v.Locale != "en" {
		t.Fatalf("got %+v", v)
	}
	v, err = decodeInto[mixedArgs](t, `{"count":7.0,"ratio":1e2,"forced":"","Plain":false,"small":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if v.Count != 7 || v.Ratio != 100 || v.Plain || v.Small != 0 {
		t.Fatalf("got %+v", v)
	}
	e, err := decodeInto[sendEmailArgs](t, `{"to":"a@b.c","subject":"hi","urgent":"false"}`)
	if err != nil || e.Urgent == nil || *e.Urgent {
		t.Fatalf("got %+v %v", e, err)
	}
	e, err = decodeInto[sendEmailArgs](t, `{"to":"a@b.c","subject":"hi"}`)
	if err != nil || e.Urgent != nil {
		t.Fatalf("got %+v %v", e, err)
	}
	if _, err := decodeInto[struct{}](t, `null`); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeInto[struct{}](t, ``); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeArgumentsMessages(t *testing.T) {
	cases := []struct {
		data string
		want string
	}{
		{`{}`, `prompt "p": missing required argument "count"; missing required argument "forced"; missing required argument "Plain"`},
		{`{"count":"abc","forced":"x","Plain":true}`, `prompt "p": argument "count" must be an integer, got "abc"`},
		{`{"count":1.5,"forced":"x","Plain":true}`, `prompt "p": argument "count" must be an integer, got 1.5`},
		{`{"count":"1.5","forced":"x","Plain":true}`, `prompt "p": argument "count" must be an integer, got "1.5"`},
		{`{"count":true,"forced":"x","Plain":true}`, `prompt "p": argument "count" must be an integer, got true`},
		{`{"count":1,"forced":5,"Plain":"yes"}`, `prompt "p": argument "forced" must be a string, got 5; argument "Plain" must be a boolean, got "yes"`},
		{`{"count":1,"forced":"x","Plain":true,"ratio":"fast"}`, `prompt "p": argument "ratio" must be a number, got "fast"`},
		{`{"count":1,"forced":"x","Plain":true,"ratio":{"a": 1}}`, `prompt "p": argument "ratio" must be a number, got {"a":1}`},
		{`{"count":1,"forced":"x","Plain":true,"small":200}`, `prompt "p": argument "small" must be an integer between -128 and 127, got 200`},
		{`{"count":1,"forced":"x","Plain":true,"size":"-1"}`, `prompt "p": argument "size" must be an integer between 0 and 65535, got "-1"`},
		{`{"count":"99999999999999999999","forced":"x","Plain":true}`, `prompt "p": argument "count" must be an integer between -9223372036854775808 and 9223372036854775807, got "99999999999999999999"`},
		{`[1,2]`, `prompt "p": arguments must be an object, got [1,2]`},
		{`"x"`, `prompt "p": arguments must be an object, got "x"`},
	}
	for _, c := range cases {
		_, err := decodeInto[mixedArgs](t, c.data)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.data, err, c.want)
		}
	}
}

func TestPromptResultShapes(t *testing.T) {
	for _, c := range []struct {
		r    PromptResult
		want string
	}{
		{Text("hi"), `"hi"`},
		{Content("hi"), `{"content":"hi"}`},
		{Messages(UserText("hi"), AssistantText("hello")), `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}},{"role":"assistant","content":{"type":"text","text":"hello"}}]}`},
		{Messages(), `{"messages":[]}`},
	} {
		b, err := json.Marshal(c.r)
		if err != nil || string(b) != c.want {
			t.Errorf("got %s %v; want %s", b, err, c.want)
		}
	}
	if _, err := json.Marshal(PromptResult{}); err == nil {
		t.Error("the zero PromptResult must not encode")
	}
}
