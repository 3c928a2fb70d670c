package app

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var docToken = regexp.MustCompile("`([^`]+)`")

// docs/config.md's table of keys names every key of Config (a section's
// keys may be named section.*) and every flag of AddFlags, and names no
// key or flag that does not exist.
func TestConfigDocNamesEveryKeyAndFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	docKeys, docFlags := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for _, m := range docToken.FindAllStringSubmatch(cells[1], -1) {
			docKeys[m[1]] = true
		}
		for _, m := range docToken.FindAllStringSubmatch(cells[2], -1) {
			docFlags[strings.TrimPrefix(m[1], "--")] = true
		}
	}
	keys := map[string]bool{}
	var walk func(reflect.Type, string)
	walk = func(st reflect.Type, prefix string) {
		for key, ft := range yamlFields(st) {
			if ft.Kind() == reflect.Struct && !implementsUnmarshaler(ft) && ft != durationType {
				keys[prefix+key+".*"] = true
				walk(ft, prefix+key+".")
				continue
			}
			keys[prefix+key] = true
			if !docKeys[prefix+key] && !docKeys[prefix+"*"] {
				t.Errorf("docs/config.md does not name the key %s%s", prefix, key)
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	for k := range docKeys {
		if !keys[k] {
			t.Errorf("docs/config.md names the key %s, which Config does not have", k)
		}
	}
	fs := flag.NewFlagSet("skills", flag.ContinueOnError)
	cfg := DefaultConfig()
	cfg.AddFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !docFlags[f.Name] {
			t.Errorf("docs/config.md does not name the flag --%s beside its key", f.Name)
		}
	})
	for f := range docFlags {
		if fs.Lookup(f) == nil {
			t.Errorf("docs/config.md names the flag --%s, which skills does not have", f)
		}
	}
}
