package skillcheck

// The Agent Skills reference validator, `skills-ref validate` (PyPI and
// npm), against skills check on every folder skill of the shared corpora
// (../shared/corpora beside the repository, or $CORPORA) and of
// testdata/broken. Every skill on which a validator's verdict differs from
// ours is listed in testdata/skills-ref/differences.txt with its reasons,
// and each reason is checked against what both sides said; a difference
// not listed, a reason that does not hold, or a listed difference that is
// gone fails the test. `make test-skills-ref` installs the validators and
// runs it; `make test-go` has no validator and skips it.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateSkillsRef = flag.Bool("update-skills-ref", false, "rewrite the difference lines of testdata/skills-ref/differences.txt (reasons are still checked)")

const skillsRefDir = "testdata/skills-ref"

// refTool is one skills-ref validator.
type refTool struct {
	name    string   // "pypi" or "npm", as differences.txt names it
	library []string // command printing {"version", "errors": {dir: [msg]}} for the dirs appended
	cli     []string // the validator's own CLI, `... validate DIR`
	version string
}

// validate runs the tool's validator on dirs (absolute).
func (r *refTool) validate(t *testing.T, dirs []string) map[string][]string {
	t.Helper()
	cmd := exec.Command(r.library[0], append(r.library[1:], dirs...)...)
	cmd.Dir = skillsRefDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s skills-ref: %v\n%s", r.name, err, stderr.String())
	}
	var res struct {
		Version string              `json:"version"`
		Errors  map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s skills-ref: %v\n%s", r.name, err, out)
	}
	r.version = res.Version
	return res.Errors
}

// refTools are the validators installed for this run (make
// test-skills-ref sets SKILLS_REF_PYTHON and SKILLS_REF_NODE).
func refTools(t *testing.T) []*refTool {
	var tools []*refTool
	var notRun []string
	if py := os.Getenv("SKILLS_REF_PYTHON"); py != "" {
		tools = append(tools, &refTool{name: "pypi", library: []string{py, "validate.py"},
			cli: []string{filepath.Join(filepath.Dir(py), "agentskills"), "validate"}})
	} else {
		notRun = append(notRun, "pypi: not run: SKILLS_REF_PYTHON unset (the python of a virtualenv with skills-ref from PyPI)")
	}
	node := os.Getenv("SKILLS_REF_NODE")
	cli := filepath.Join(skillsRefDir, "node_modules", "skills-ref", "dist", "cli.js")
	if _, err := os.Stat(cli); node != "" && err == nil {
		abs, _ := filepath.Abs(cli)
		tools = append(tools, &refTool{name: "npm", library: []string{node, "validate.mjs"}, cli: []string{node, abs, "validate"}})
	} else {
		notRun = append(notRun, "npm: not run: SKILLS_REF_NODE unset or skills-ref not installed in "+skillsRefDir+" (npm ci)")
	}
	if len(tools) == 0 {
		t.Skip("not run: no skills-ref validator installed (make test-skills-ref installs them)")
	}
	for _, n := range notRun {
		t.Log(n)
	}
	return tools
}

// corporaDir is the shared corpora ($CORPORA, else beside the
// repository), or "" when absent.
func corporaDir() string {
	candidates := []string{"../../../../shared/corpora", "../../../../../shared/corpora"}
	if c := os.Getenv("CORPORA"); c != "" {
		candidates = []string{c}
	}
	for _, d := range candidates {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	return ""
}

// skillSet is a tree of folders checked together: skills check gets
// Folders (in precedence order) from Root; each folder skill under them
// is one verdict, named Label/<folder>/<skill> in differences.txt.
type skillSet struct {
	label, root string
	folders     []string
}

// skillDirs lists the folder skills (a SKILL.md in any letter case
// directly inside) under folder, relative to the set's root.
func (s skillSet) skillDirs(t *testing.T, folder string) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(s.root, folder), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && isSkillDir(p) && !isBundleDir(p) {
			rel, _ := filepath.Rel(s.root, p)
			out = append(out, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isBundleDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "skill.toml"))
	return err == nil
}

// difference is one line of differences.txt: a skill, the validators
// whose verdict differs from ours, and why.
type difference struct{ skill, tools, reasons string }

func (d difference) String() string { return d.skill + "\t" + d.tools + "\t" + d.reasons }

func TestSkillsRef(t *testing.T) {
	tools := refTools(t)
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	sets := []skillSet{{label: "testdata", root: testdata, folders: []string{"broken"}}}
	if c := corporaDir(); c != "" {
		entries, err := os.ReadDir(c)
		if err != nil {
			t.Fatal(err)
		}
		set := skillSet{label: "corpora", root: c}
		for _, e := range entries {
			if e.IsDir() {
				set.folders = append(set.folders, e.Name())
			}
		}
		sets = append(sets, set)
	} else {
		t.Log("corpora: not run: no ../shared/corpora beside the repository (set CORPORA); only testdata/broken is compared")
	}

	var found []difference
	skills, agree := 0, map[string]int{}
	for _, set := range sets {
		rep, err := Check(context.Background(), Options{Dir: set.root, Paths: set.folders})
		if err != nil {
			t.Fatal(err)
		}
		var dirs, abs []string
		for _, f := range set.folders {
			for _, d := range set.skillDirs(t, f) {
				dirs = append(dirs, d)
				abs = append(abs, filepath.Join(set.root, filepath.FromSlash(d)))
			}
		}
		skills += len(dirs)
		verdicts := map[string]map[string][]string{} // tool → abs dir → messages
		for _, tool := range tools {
			verdicts[tool.name] = tool.validate(t, abs)
		}
		for i, dir := range dirs {
			ours := findingsIn(rep, dir)
			byReasons := map[string][]string{} // reasons → tools
			for _, tool := range tools {
				theirs := verdicts[tool.name][abs[i]]
				if (len(theirs) > 0) == hasError(ours) {
					agree[tool.name]++
					continue
				}
				var other []string
				for _, o := range tools {
					if o != tool {
						other = verdicts[o.name][abs[i]]
					}
				}
				r := explain(theirs, ours, other)
				byReasons[r] = append(byReasons[r], tool.name)
			}
			for r, ts := range byReasons {
				found = append(found, difference{skill: set.label + "/" + dir, tools: strings.Join(ts, ","), reasons: r})
			}
		}
	}
	slices.SortFunc(found, func(a, b difference) int { return strings.Compare(a.String(), b.String()) })

	fixture := filepath.Join(skillsRefDir, "differences.txt")
	header, listed, defined := readDifferences(t, fixture)
	ran := map[string]bool{}
	for _, s := range sets {
		ran[s.label] = true
	}
	toolRan := map[string]bool{}
	for _, tool := range tools {
		toolRan[tool.name] = true
	}
	// Compared per validator: a line for both holds for each that ran.
	var want []difference
	for _, d := range perTool(listed) {
		if label, _, _ := strings.Cut(d.skill, "/"); ran[label] && toolRan[d.tools] {
			want = append(want, d)
		}
	}
	// Every reason must be defined in the fixture's header and hold.
	for _, d := range found {
		for _, r := range strings.Split(d.reasons, ",") {
			kind, _, _ := strings.Cut(r, ":")
			if strings.HasPrefix(r, "unexplained") {
				t.Errorf("%s: %s disagrees with skills check for no known reason: %s", d.skill, d.tools, r)
			} else if !defined[kind] {
				t.Errorf("%s: reason %q is not defined in %s (a line \"# reason %s: why\")", d.skill, r, fixture, kind)
			}
		}
	}
	if *updateSkillsRef {
		if !t.Failed() {
			writeDifferences(t, fixture, header, found, listed, ran, toolRan)
		}
		return
	}
	missing, gone := diffLines(perTool(found), want)
	for _, d := range missing {
		t.Errorf("difference not in %s (add it with its reasons, or fix the check): %s", fixture, d)
	}
	for _, d := range gone {
		t.Errorf("listed in %s but no longer a difference (remove the line): %s", fixture, d)
	}
	checkCLI(t, tools)
	versions := make([]string, len(tools))
	for i, tool := range tools {
		versions[i] = fmt.Sprintf("%s %s agrees on %d", tool.name, tool.version, agree[tool.name])
	}
	differ := map[string]bool{}
	for _, d := range found {
		differ[d.skill] = true
	}
	t.Logf("Summary: skills-ref validate on %d folder skills (%s), the %d where one differs from skills check explained in %s",
		skills, strings.Join(versions, ", "), len(differ), fixture)
}

// findingsIn are the findings about files inside dir (relative to the
// set's root, '/'-separated).
func findingsIn(rep Report, dir string) []Finding {
	var out []Finding
	for _, f := range rep.Findings {
		if p := filepath.ToSlash(f.File); strings.HasPrefix(p, dir+"/") {
			out = append(out, f)
		}
	}
	return out
}

func hasError(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error })
}

var (
	// unexpectedFieldsRe is skills-ref's refusal of keys outside the
	// specification (both versions).
	unexpectedFieldsRe = regexp.MustCompile(`^Unexpected fields in frontmatter: (.+?)\. Only `)
)

// explain gives the reasons a validator's verdict (theirs) differs from
// ours, each checked against what was said; what cannot be explained is
// an "unexplained: …" reason. other is the other validator's verdict.
func explain(theirs []string, ours []Finding, other []string) string {
	var reasons []string
	add := func(r string) {
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	if len(theirs) > 0 {
		// They refuse, we serve.
		for _, msg := range theirs {
			switch m := unexpectedFieldsRe.FindStringSubmatch(msg); {
			case m != nil:
				for _, key := range strings.Split(m[1], ", ") {
					warned := slices.ContainsFunc(ours, func(f Finding) bool { return f.Message == keyWarning(key) })
					switch {
					case !warned:
						add("unexplained: skills check does not warn about key " + key)
					case len(harnessKeys[key]) > 0:
						add("harness-key:" + key)
					default:
						add("key:" + key)
					}
				}
			case strings.HasPrefix(msg, "Invalid YAML in frontmatter") && strings.Contains(msg, "flow") &&
				!slices.ContainsFunc(other, func(o string) bool { return strings.HasPrefix(o, "Invalid YAML") }):
				add("yaml-flow-style")
			default:
				add("unexplained: " + firstLine(msg))
			}
		}
	} else {
		// We refuse, they serve.
		for _, f := range ours {
			switch {
			case f.Severity != Error:
			case f.Rule == "link" || f.Rule == "iii-link" || f.Rule == "section":
				add("link")
			case strings.HasPrefix(f.Message, "frontmatter `allowed-tools"):
				add("allowed-tools-type")
			default:
				add("unexplained: " + f.Message)
			}
		}
	}
	slices.Sort(reasons)
	return strings.Join(reasons, ",")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// readDifferences reads the fixture: its comment header, its difference
// lines, and the reasons its header defines ("# reason KIND: why").
func readDifferences(t *testing.T, path string) (header []string, diffs []difference, defined map[string]bool) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defined = map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			if len(diffs) == 0 {
				header = append(header, line)
			}
			if rest, ok := strings.CutPrefix(line, "# reason "); ok {
				kind, why, _ := strings.Cut(rest, ":")
				if strings.TrimSpace(why) == "" {
					t.Errorf("%s: reason %s has no explanation", path, kind)
				}
				defined[kind] = true
			}
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			t.Fatalf("%s: want skill<TAB>tools<TAB>reasons, got %q", path, line)
		}
		diffs = append(diffs, difference{parts[0], parts[1], parts[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header, diffs, defined
}

// writeDifferences rewrites the fixture's lines for the sets and
// validators that ran, keeping its header and the other lines.
func writeDifferences(t *testing.T, path string, header []string, found, listed []difference, ran, toolRan map[string]bool) {
	all := slices.Clone(found)
	for _, d := range perTool(listed) {
		if label, _, _ := strings.Cut(d.skill, "/"); !ran[label] || !toolRan[d.tools] {
			all = append(all, d)
		}
	}
	// One line per skill and reasons, naming every validator it holds for.
	merged := map[[2]string][]string{}
	for _, d := range perTool(all) {
		k := [2]string{d.skill, d.reasons}
		if !slices.Contains(merged[k], d.tools) {
			merged[k] = append(merged[k], d.tools)
		}
	}
	all = all[:0]
	for k, ts := range merged {
		slices.SortFunc(ts, func(a, b string) int { return strings.Compare(b, a) }) // pypi before npm
		all = append(all, difference{k[0], strings.Join(ts, ","), k[1]})
	}
	slices.SortFunc(all, func(a, b difference) int { return strings.Compare(a.String(), b.String()) })
	var b strings.Builder
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	for _, d := range all {
		b.WriteString(d.String() + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// perTool splits lines naming several validators into one per validator.
func perTool(ds []difference) []difference {
	var out []difference
	for _, d := range ds {
		for _, tool := range strings.Split(d.tools, ",") {
			out = append(out, difference{d.skill, tool, d.reasons})
		}
	}
	return out
}

// diffLines: what was found and is not listed, what is listed and was not
// found.
func diffLines(found, listed []difference) (missing, gone []difference) {
	for _, d := range found {
		if !slices.Contains(listed, d) {
			missing = append(missing, d)
		}
	}
	for _, d := range listed {
		if !slices.Contains(found, d) {
			gone = append(gone, d)
		}
	}
	return missing, gone
}

// checkCLI runs each validator's own `validate` command on a skill it
// accepts and one it refuses: the exit status and messages are those of
// the library call the comparison uses.
func checkCLI(t *testing.T, tools []*refTool) {
	for _, tool := range tools {
		for _, c := range []struct {
			dir  string
			exit int
		}{{"testdata/broken/good", 0}, {"testdata/broken/name-mismatch", 1}} {
			abs, _ := filepath.Abs(c.dir)
			msgs := tool.validate(t, []string{abs})[abs]
			out, err := exec.Command(tool.cli[0], append(tool.cli[1:], abs)...).CombinedOutput()
			exit := 0
			if ee, ok := err.(*exec.ExitError); ok {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s %v: %v", tool.name, tool.cli, err)
			}
			if exit != c.exit || (len(msgs) > 0) != (c.exit == 1) {
				t.Errorf("%s CLI on %s: exit %d, want %d (library: %q)\n%s", tool.name, c.dir, exit, c.exit, msgs, out)
			}
			for _, m := range msgs {
				if !strings.Contains(string(out), m) {
					t.Errorf("%s CLI on %s does not print the library's %q:\n%s", tool.name, c.dir, m, out)
				}
			}
		}
	}
}
