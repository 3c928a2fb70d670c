package app

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ErrNoFile wraps the error of a config file that does not exist: the
// caller may run on the defaults (the default ./config.yaml is optional).
var ErrNoFile = errors.New("no config file")

// engineKeys are top-level keys of the iii engine's own config.yaml
// (workers: [{name: iii-state, config: …}], modules: in older engines).
var engineKeys = []string{"workers", "modules"}

// Load reads a skills config file over DefaultConfig. It refuses a file
// that does not parse (with the parser's line), one whose values have the
// wrong type, one that holds keys no setting has (each named with its
// file:line and, for a near miss, the key meant) and one that is another
// program's config (the iii engine's). A missing file is ErrNoFile with
// the defaults. Load does not Validate.
func Load(path string) (Config, error) {
	cfg := DefaultConfig()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, fmt.Errorf("%w: %w", ErrNoFile, err)
	}
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := Parse(raw, path, &cfg); err != nil {
		return DefaultConfig(), err
	}
	cfg.Path = path
	return cfg, nil
}

// Parse decodes a skills config document into cfg; name labels errors.
func Parse(raw []byte, name string, cfg *Config) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s is not valid YAML: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil // empty file: the defaults
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: a skills config is a mapping of keys (scopes:, skills_folder:, …), got %s", name, root.Line, kindName(root))
	}
	if err := notEngineConfig(root, name); err != nil {
		return err
	}
	var unknown, durations []string
	checkKeys(root, reflect.TypeOf(*cfg), "", name, &unknown, &durations)
	if len(unknown) > 0 {
		return fmt.Errorf("%s has %s no skills setting has:\n  %s", name, plural(len(unknown), "a key", "keys"), strings.Join(unknown, "\n  "))
	}
	if len(durations) > 0 {
		return errors.New(strings.Join(durations, "\n"))
	}
	if err := root.Decode(cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: %s", name, strings.Join(te.Errors, "; "))
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// notEngineConfig refuses the iii engine's config.yaml, which users meet
// when they start skills in the engine's folder.
func notEngineConfig(root *yaml.Node, name string) error {
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		for _, e := range engineKeys {
			if k.Value == e {
				return fmt.Errorf("%s:%d: this looks like the iii engine's config (top-level %s:), not a skills config; "+
					"give skills its own file with --config PATH (or start it in another folder)", name, k.Line, e)
			}
		}
	}
	return nil
}

// checkKeys appends "file:line: unknown key K; did you mean M?" to unknown
// for every key of n that t (a struct, read through its yaml tags) has no
// field for, and to durations what is wrong with every value of a
// time.Duration field that is not a duration (checkDuration).
func checkKeys(n *yaml.Node, t reflect.Type, prefix, name string, unknown, durations *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if msg := checkDuration(n, strings.TrimSuffix(prefix, ".")); msg != "" {
			*durations = append(*durations, fmt.Sprintf("%s:%d: %s", name, n.Line, msg))
		}
		return
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", strings.TrimSuffix(prefix, "."), i)+".", name, unknown, durations)
		}
		return
	case implementsUnmarshaler(t):
		return // decodes itself (HostList, FolderList)
	case t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return // maps (secrets) take any key; type errors are Decode's
	}
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("%s:%d: unknown key %s%s", name, k.Line, prefix, k.Value)
			if near := nearest(k.Value, fields); near != "" {
				msg += "; did you mean " + prefix + near + "?"
			}
			*unknown = append(*unknown, msg)
			continue
		}
		checkKeys(v, ft, prefix+k.Value+".", name, unknown, durations)
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

// checkDuration is the one rule of our own duration keys: a Go duration
// string ("30s", "90m", "24h"; 0 alone needs no unit), decoded into a
// time.Duration. Keys that upstream's config.yaml defines keep their
// names and units (state_timeout_ms, download_timeout_ms,
// registry_cache_ttl_ms are integers of milliseconds) and are not
// durations here. It says what to write instead of a value that is not a
// duration, and marks a bare 0 as the string it decodes from (the YAML
// decoder takes no integer into a time.Duration). null is the default.
func checkDuration(n *yaml.Node, key string) string {
	if n.Kind != yaml.ScalarNode {
		return fmt.Sprintf("%s: expected a duration such as 30s, 90m or 24h, got %s", key, kindName(n))
	}
	if n.Tag == "!!null" {
		return ""
	}
	if _, err := time.ParseDuration(n.Value); err == nil {
		n.Tag = "!!str"
		return ""
	}
	if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
		return fmt.Sprintf("%s %s: a duration needs its unit: write %q for seconds (or ms, m, h: %q, %q)",
			key, n.Value, n.Value+"s", n.Value+"ms", n.Value+"m")
	}
	if n.Value == "" {
		return fmt.Sprintf("%s \"\": expected a duration such as 30s, 90m or 24h; leave the key out for the default", key)
	}
	return fmt.Sprintf("%s %q: expected a duration such as 30s, 90m or 24h", key, n.Value)
}

// yamlFields maps each key of struct t (inline fields flattened) to its type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		key, opts, _ := strings.Cut(tag, ",")
		if key == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		out[key] = f.Type
	}
	return out
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func implementsUnmarshaler(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// nearest is the known key closest to key when it is a plausible typo
// (a few edits, or the same words in another form), else "".
func nearest(key string, known map[string]reflect.Type) string {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	return Suggest(key, names)
}

// Suggest returns the candidate closest to s by edit distance when it is
// close enough to be a typo (at most a third of the longer name, at least
// 2 edits allowed), else "". Ties go to the alphabetically first.
func Suggest(s string, candidates []string) string {
	sort.Strings(candidates)
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(s, c)
		limit := max(2, max(len(s), len(c))/3)
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "something else"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf("%d %s", n, many)
}
