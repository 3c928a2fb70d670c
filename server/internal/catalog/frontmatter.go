package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// SplitFrontmatter separates a leading YAML block from a markdown file the
// way iii-directory v0.5 does. A block is recognised only when content
// starts at byte 0 with "---\n" or "---\r\n"; it closes at the first
// "\n---\n" or "\n---\r\n", or with "\n---" / "\n---\r" at the very end.
// The body is everything after the closing fence, byte for byte. Without
// an opening or a closing fence, ok is false and the whole content is the
// body. In CRLF files the YAML keeps its trailing '\r'.
func SplitFrontmatter(content string) (yamlText, body string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(content, "---\n"):
		rest = content[4:]
	case strings.HasPrefix(content, "---\r\n"):
		rest = content[5:]
	default:
		return "", content, false
	}
	// The closing fence may directly follow the opening one (empty YAML):
	// search from one byte back so "---\n---\n" closes.
	search := "\n" + rest
	for off := 0; ; {
		i := strings.Index(search[off:], "\n---")
		if i < 0 {
			return "", content, false
		}
		i += off
		after := search[i+4:]
		yamlEnd := i - 1 // index in rest; -1 when the fence opens rest
		if yamlEnd < 0 {
			yamlEnd = 0
		}
		switch {
		case strings.HasPrefix(after, "\n"):
			return rest[:yamlEnd], after[1:], true
		case strings.HasPrefix(after, "\r\n"):
			return rest[:yamlEnd], after[2:], true
		case after == "" || after == "\r":
			return rest[:yamlEnd], "", true
		}
		off = i + 1
	}
}

// Field is one key of a YAML mapping.
type Field struct {
	Key   string
	Value any
}

// Map is a YAML mapping with its key order kept. Values are nil, bool,
// int, float64, string, []any or Map.
type Map []Field

// Get returns the value at key.
func (m Map) Get(key string) (any, bool) {
	for _, f := range m {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// String returns the value at key when it is a string.
func (m Map) String(key string) (string, bool) {
	v, ok := m.Get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// Keys lists the keys in order.
func (m Map) Keys() []string {
	keys := make([]string, len(m))
	for i, f := range m {
		keys[i] = f.Key
	}
	return keys
}

// MarshalJSON encodes m as a JSON object in key order.
func (m Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("frontmatter key %q: %w", f.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Frontmatter is a file's YAML block: the raw text and the parsed mapping.
type Frontmatter struct {
	// Present is true when the file had a frontmatter block (even empty).
	Present bool
	// Raw is the YAML text between the fences, as in the file.
	Raw string
	// Fields is the parsed top-level mapping in key order.
	Fields Map
}

// ErrFrontmatterNotMapping is returned by ParseFrontmatter for YAML whose
// top level is a list or a scalar.
var ErrFrontmatterNotMapping = errors.New("frontmatter is not a YAML mapping (expected key: value lines)")

// ParseFrontmatter parses raw YAML text. Empty or comment-only text is an
// empty mapping; anything else must be a mapping with scalar keys.
func ParseFrontmatter(raw string) (Frontmatter, error) {
	fm := Frontmatter{Present: true, Raw: raw}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		return fm, fmt.Errorf("invalid frontmatter YAML: %w", fixYAMLLine(raw, err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return fm, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
			return fm, nil
		}
		return fm, ErrFrontmatterNotMapping
	}
	budget := maxYAMLValues
	v, err := nodeValue(top, 0, &budget)
	if err != nil {
		return fm, fmt.Errorf("invalid frontmatter YAML: %w", err)
	}
	fm.Fields = v.(Map)
	return fm, nil
}

// maxYAMLDepth bounds nesting (and alias expansion) of frontmatter values.
const maxYAMLDepth = 64

// maxYAMLValues bounds the values one frontmatter expands to: aliases of
// aliases grow exponentially (a 300-byte "billion laughs" block is 10^8
// values), and frontmatter comes from folders and published bundles.
const maxYAMLValues = 100000

func nodeValue(n *yaml.Node, depth int, budget *int) (any, error) {
	if depth > maxYAMLDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels", n.Line, maxYAMLDepth)
	}
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("line %d: expands to more than %d values (aliases of aliases?)", n.Line, maxYAMLValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias, depth+1, budget)
	case yaml.MappingNode:
		m := make(Map, 0, len(n.Content)/2)
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be scalars", k.Line)
			}
			val, err := nodeValue(v, depth+1, budget)
			if err != nil {
				return nil, err
			}
			if seen[k.Value] {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			m = append(m, Field{Key: k.Value, Value: val})
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, depth+1, budget)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		// .inf and .nan have no JSON form; every surface encodes fields
		// as JSON, so they stay the text the file has.
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return n.Value, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
