package reach

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/kv"
)

// Bounds on what other nodes' rows may hold in memory: on a real engine
// any worker may write any state scope.
const (
	maxNodes         = 256
	maxNodeFunctions = 50_000
	maxNodeName      = 512
)

// nodeRow is one node's row in the nodes scope: the functions of its
// engine that may back a prompt or a section, as its registry last listed
// them. Its key is nodeKey(Node), so a row names its own key.
type nodeRow struct {
	Node      string   `json:"node"`
	Functions []string `json:"functions"`
	// Bridge: that node's engine runs the iii-bridge worker.
	Bridge    bool   `json:"bridge"`
	UpdatedAt string `json:"updated_at"`
}

// node is another node's row as a Follower holds it.
type node struct {
	name, at  string
	functions map[string]bool
}

// nodeKey is the state key of a node's row: a node name may hold any
// character (a host name, an engine URL).
func nodeKey(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:8])
}

func validKey(key string) bool {
	if len(key) != 16 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// nodeOf checks a row read from state under key; ok is false for a row
// that is not a node's, or too large to hold.
func nodeOf(key string, raw json.RawMessage) (node, bool) {
	var row nodeRow
	if json.Unmarshal(raw, &row) != nil || row.Node == "" || len(row.Node) > maxNodeName ||
		nodeKey(row.Node) != key || len(row.Functions) > maxNodeFunctions {
		return node{}, false
	}
	n := node{name: row.Node, at: row.UpdatedAt, functions: make(map[string]bool, len(row.Functions))}
	for _, fn := range row.Functions {
		n.functions[fn] = true
	}
	return n, true
}

// writeRow stores this node's row and announces it; a failure leaves it to
// the next refresh.
func (f *Follower) writeRow(ctx context.Context, ids []string, bridge bool) {
	row := nodeRow{Node: f.opts.Node, Functions: ids, Bridge: bridge, UpdatedAt: time.Now().UTC().Format(time.RFC3339)}
	wctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	if err := kv.Put(wctx, f.opts.Shared, f.opts.Scope, f.key, row); err != nil {
		f.log.Warn("reach: cannot record this node's functions in shared state; other nodes cannot name it as their holder yet",
			"scope", f.opts.Scope, "err", err)
		return
	}
	f.mu.Lock()
	f.written = ids
	f.mu.Unlock()
	if f.opts.Announce != nil {
		f.opts.Announce(ctx, f.key)
	}
}

// Scope is the nodes scope in package cluster: other nodes' rows, applied
// one key at a time and re-listed whole.
func (f *Follower) Scope() cluster.Scope { return nodesScope{f} }

type nodesScope struct{ f *Follower }

// Apply re-reads one node's row. When this engine runs the bridge, the
// engine across it may be that node's: it is listed again too.
func (s nodesScope) Apply(ctx context.Context, key string) error {
	f := s.f
	if !validKey(key) {
		return cluster.ErrNotAKey
	}
	if key == f.key || f.opts.Shared == nil {
		return nil
	}
	raw, ok, err := f.opts.Shared.Get(ctx, f.opts.Scope, key)
	if err != nil {
		return fmt.Errorf(iii.StateGet+" %s/%s after a change on another node: %w", f.opts.Scope, key, err)
	}
	n, valid := nodeOf(key, raw)
	f.mu.Lock()
	_, had := f.nodes[key]
	switch {
	case !ok || !valid:
		delete(f.nodes, key)
	case had || len(f.nodes) < maxNodes:
		f.nodes[key] = n
	}
	bridge := f.bridge
	f.mu.Unlock()
	if bridge {
		f.Wake()
	}
	return nil
}

// Relist reads every node's row.
func (s nodesScope) Relist(ctx context.Context) error {
	f := s.f
	if f.opts.Shared == nil {
		return nil
	}
	rows, err := f.opts.Shared.List(ctx, f.opts.Scope)
	if err != nil {
		return fmt.Errorf(iii.StateList+" %s: %w", f.opts.Scope, err)
	}
	nodes := map[string]node{}
	for _, raw := range rows {
		var head struct {
			Node string `json:"node"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		key := nodeKey(head.Node)
		if n, ok := nodeOf(key, raw); ok && key != f.key && len(nodes) < maxNodes {
			nodes[key] = n
		}
	}
	f.mu.Lock()
	f.nodes = nodes
	bridge := f.bridge
	f.mu.Unlock()
	if bridge {
		f.Wake()
	}
	return nil
}
