package catalog_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
)

func TestSplitFrontmatter(t *testing.T) {
	cases := []struct {
		name, in, yaml, body string
		ok                   bool
	}{
		{"none", "# Hi\n", "", "# Hi\n", false},
		{"lf", "---\na: 1\n---\n# Hi\n", "a: 1", "# Hi\n", true},
		{"crlf keeps \\r in yaml", "---\r\na: 1\r\n---\r\nbody", "a: 1\r", "body", true},
		{"fence at end", "---\na: 1\n---", "a: 1", "", true},
		{"fence at end crlf", "---\na: 1\n---\r", "a: 1", "", true},
		{"no closing fence", "---\na: 1\nbody", "", "---\na: 1\nbody", false},
		{"not at byte 0", " ---\na: 1\n---\nb", "", " ---\na: 1\n---\nb", false},
		{"four dashes do not close", "---\na: 1\n----\nx\n---\nbody", "a: 1\n----\nx", "body", true},
		{"empty yaml", "---\n---\nbody", "", "body", true},
		{"body verbatim", "---\na: 1\n---\n\n\n  text  \n", "a: 1", "\n\n  text  \n", true},
	}
	for _, c := range cases {
		y, b, ok := catalog.SplitFrontmatter(c.in)
		if y != c.yaml || b != c.body || ok != c.ok {
			t.Errorf("%s: got (%q, %q, %v), want (%q, %q, %v)", c.name, y, b, ok, c.yaml, c.body, c.ok)
		}
	}
}

func TestParseFrontmatter(t *testing.T) {
	fm, err := catalog.ParseFrontmatter("name: pdf\ndescription: Reads PDFs\nmetadata:\n  zeta: 1\n  alpha: [a, b]\nallowed-tools: Bash\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := fm.Fields.Keys(); len(got) != 4 || got[0] != "name" || got[2] != "metadata" {
		t.Fatalf("keys %v", got)
	}
	if s, ok := fm.Fields.String("description"); !ok || s != "Reads PDFs" {
		t.Fatal("String")
	}
	j, err := json.Marshal(fm.Fields)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"pdf","description":"Reads PDFs","metadata":{"zeta":1,"alpha":["a","b"]},"allowed-tools":"Bash"}`
	if string(j) != want {
		t.Fatalf("json %s", j)
	}
	if fm, err := catalog.ParseFrontmatter("# only a comment\n"); err != nil || !fm.Present || len(fm.Fields) != 0 {
		t.Fatalf("comment-only: %v %+v", err, fm)
	}
	if _, err := catalog.ParseFrontmatter("- a\n- b\n"); !errors.Is(err, catalog.ErrFrontmatterNotMapping) {
		t.Fatalf("list: %v", err)
	}
	for _, bad := range []string{"a: [1, 2\n", "a: 1\na: 2\n", "? [x]\n: 1\n"} {
		if _, err := catalog.ParseFrontmatter(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestVersionRules(t *testing.T) {
	for _, v := range []string{"", "0.0.1", "1.2.3-rc.1", "1.2.3+build.5"} {
		if err := catalog.ValidateVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"1", "1.2", "v1.2.3", "1.2.3.4", "01.2.3", "x"} {
		if err := catalog.ValidateVersion(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
	order := []string{"", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0", "1.2.0", "1.10.0"}
	for i := 1; i < len(order); i++ {
		if catalog.CompareVersions(order[i-1], order[i]) >= 0 || catalog.CompareVersions(order[i], order[i-1]) <= 0 {
			t.Errorf("%q !< %q", order[i-1], order[i])
		}
	}
}

// laughs is a "billion laughs" block: 294 bytes that expand to 10^8 values.
func laughs() string {
	var sb strings.Builder
	sb.WriteString("a: &a [x,x,x,x,x,x,x,x,x,x]\n")
	prev := "a"
	for i := 0; i < 7; i++ {
		n := string(rune('b' + i))
		sb.WriteString(n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",") + "]\n")
		prev = n
	}
	return sb.String()
}

func TestFrontmatterHostileValues(t *testing.T) {
	_, err := catalog.ParseFrontmatter(laughs())
	if err == nil || !strings.Contains(err.Error(), "expands to more than 100000 values") {
		t.Fatalf("alias bomb: %v", err)
	}
	// Values without a JSON form keep their text.
	fm, err := catalog.ParseFrontmatter("a: .inf\nb: .nan\n")
	if err != nil {
		t.Fatal(err)
	}
	if j, err := json.Marshal(fm.Fields); err != nil || string(j) != `{"a":".inf","b":".nan"}` {
		t.Fatalf("non-finite numbers: %s %v", j, err)
	}
	// Ordinary aliases still work.
	fm, err = catalog.ParseFrontmatter("base: &b {k: v}\nuse: *b\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fm.Fields.Get("use"); !ok {
		t.Fatal("alias value missing")
	}
}

// FuzzFrontmatter: any SKILL.md text splits and parses without panicking,
// within the value budget, and a split never loses bytes of the body.
func FuzzFrontmatter(f *testing.F) {
	for _, seed := range []string{
		"---\nname: pdf\ndescription: Reads PDFs\n---\n# Body\n",
		"---\r\na: [1, {b: c}]\r\n---\r\nbody",
		"---\nbase: &b {k: v}\nuse: *b\n---\n",
		"---\n" + laughs() + "---\n",
		"no frontmatter",
		"---\n- a\n---\n",
		"---\na: .inf\nb: -.Inf\nc: .nan\n---\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		y, body, ok := catalog.SplitFrontmatter(content)
		if !ok {
			if body != content {
				t.Fatalf("no frontmatter, but the body differs from the content")
			}
			return
		}
		if !strings.HasSuffix(content, body) || len(y) > len(content) {
			t.Fatalf("split (%q, %q) of %q", y, body, content)
		}
		fm, err := catalog.ParseFrontmatter(y)
		if err == nil {
			if _, jerr := json.Marshal(fm.Fields); jerr != nil {
				t.Fatalf("parsed frontmatter does not encode: %v", jerr)
			}
		}
	})
}

// Syntax errors name the 1-based line of the YAML text the fault is on
// (yaml.v3 alone prints parser errors 0-based and first-line ones without
// a line).
func TestParseFrontmatterErrorLines(t *testing.T) {
	cases := []struct {
		yaml string
		want string // the message after "invalid frontmatter YAML: "
	}{
		{"name: x\ndescription: [unclosed\n", "yaml: line 2: did not find expected ',' or ']'"},
		{"a: 1\nb: {c: 1\n", "yaml: line 2: did not find expected ',' or '}'"},
		{"- a\nb: 1\n", "yaml: line 2: did not find expected '-' indicator"},
		{"a: 1\n- b\n", "yaml: line 2: did not find expected key"},
		{"a: 1\nb:\n  c: 1\n d: 2\n", "yaml: line 4: did not find expected key"},
		{"a: 1\nb: !foo!x y\n", "yaml: line 2: found undefined tag handle"},
		// Scanner errors: yaml.v3's line is right, or absent on line 1.
		{"a: 1\n b: 2\n", "yaml: line 2: mapping values are not allowed in this context"},
		{"a: b: c\n", "yaml: line 1: mapping values are not allowed in this context"},
		{"\ta: 1\n", "yaml: line 1: found character that cannot start any token"},
		// Reader errors carry no mark: the line of the refused byte.
		{"a: 1\nb: 2\nc: \x01\n", "yaml: line 3: control characters are not allowed"},
		// Found at the end of the input: the last line, not the one after.
		{"title: ok\ntags: [a,", "yaml: line 2: did not find expected node content"},
		{"title: ok\ntags: [a,\n\n", "yaml: line 2: did not find expected node content"},
		{"a: 1\nb: \xff\n", "yaml: line 2: invalid leading UTF-8 octet"},
		// Not about a line: unchanged.
		{"a: *nope\n", "yaml: unknown anchor 'nope' referenced"},
	}
	for _, c := range cases {
		_, err := catalog.ParseFrontmatter(c.yaml)
		if err == nil {
			t.Errorf("%q: accepted", c.yaml)
			continue
		}
		if got := strings.TrimPrefix(err.Error(), "invalid frontmatter YAML: "); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.yaml, got, c.want)
		}
	}
}
