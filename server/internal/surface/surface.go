// Package surface names the five ways a call reaches the registry: the iii
// worker protocol, MCP, the Skills Protocol's /rpc, the web page and the
// downloads (the discovery index and archives). Metrics, usage counting and
// traces label what they record with these names, so the set stays the
// same five everywhere and never grows from user input.
package surface

// Surface is one of the registry's surfaces. The zero value is III.
type Surface uint8

// The surfaces, in the order Count and All use.
const (
	III      Surface = iota // iii functions (skill::fetch, skills::list, …) over the engine
	MCP                     // the MCP server at /mcp and `skills mcp`
	RPC                     // the Skills Protocol's JSON-RPC at /rpc
	Web                     // the web page at /
	Download                // the discovery index and archives (/.well-known/agent-skills/, /archive/)
)

// Count is how many surfaces there are: arrays indexed by Surface have this
// length.
const Count = 5

var names = [Count]string{"iii", "mcp", "rpc", "web", "download"}

// All lists every surface, in order.
func All() [Count]Surface { return [Count]Surface{III, MCP, RPC, Web, Download} }

// String is the surface's label value: iii, mcp, rpc, web or download.
func (s Surface) String() string {
	if int(s) < Count {
		return names[s]
	}
	return "unknown"
}

// Valid reports whether s is one of the four surfaces.
func (s Surface) Valid() bool { return int(s) < Count }

// Parse returns the surface named name (iii, mcp, rpc or web).
func Parse(name string) (Surface, bool) {
	for i, n := range names {
		if n == name {
			return Surface(i), true
		}
	}
	return 0, false
}
