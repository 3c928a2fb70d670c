package registry

import "github.com/iii-skills/skills/sdk-go/rules"

// RustDebugQuote is the quoting every registry message uses.
var RustDebugQuote = rules.RustQuote
