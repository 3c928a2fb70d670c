package registry_test

import (
	"encoding/json"
	"fmt"

	"github.com/iii-skills/skills/server/internal/registry"
)

func ExampleParseURI() {
	for _, uri := range []string{"iii://skills", "iii://resend/email/send", "iii://fn/resend/email/send", "iii://fn"} {
		t, err := registry.ParseURI(uri)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s id=%q function=%q\n", t.Kind, t.ID, t.FunctionID)
	}
	// Output:
	// index id="" function=""
	// skill id="resend/email/send" function=""
	// section id="" function="resend::email::send"
	// error: Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: iii://fn
}

func ExampleIndex() {
	idx := registry.NewIndex()
	idx.Put("resend", "# resend\n\nEmail provider integration.")
	idx.Put("resend/email", "# resend/email\n\nEmail flows.")
	fmt.Print(idx.Render()[len(registry.IndexHeader):])
	// Output:
	// - [`resend`](iii://resend) — resend — Email provider integration.
	//   - [`resend/email`](iii://resend/email) — resend/email — Email flows.
}

func ExampleSelectFetchURIs() {
	uris, err := registry.SelectFetchURIs(nil, []string{"iii://skills", " agent-memory ", "  "}, true)
	fmt.Println(uris, err)
	_, err = registry.SelectFetchURIs(nil, []string{"agent-memory"}, false)
	fmt.Println(err)
	// Output:
	// [iii://skills iii://agent-memory] <nil>
	// Invalid URI (must start with iii://): agent-memory
}

func ExampleNormalizeSectionOutput() {
	text, mime := registry.NormalizeSectionOutput(json.RawMessage(`{"count":42,"label":"json","ratio":1.0}`))
	fmt.Println(mime)
	fmt.Println(text)
	// Output:
	// application/json
	// {
	//   "count": 42,
	//   "label": "json",
	//   "ratio": 1.0
	// }
}
