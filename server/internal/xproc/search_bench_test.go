package xproc

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// corpusDir holds the search evaluation corpus (real skills, licences
// beside them).
const corpusDir = "../search/testdata/corpus"

// BenchmarkSearch10K measures skills::search from another process over
// 10 000 published skills (bodies of the search corpus, 322 skills
// repeated under their own ids), the evaluation queries in turn, one
// caller. Target: p50 ≤ 5 ms.
func BenchmarkSearch10K(b *testing.B) {
	const n = 10000
	bodies := corpusBodies(b)
	queries := evalQueries(b)
	skills := startSkills(b, b.TempDir())
	clients := make([]*iii.Client, 16)
	for i := range clients {
		clients[i] = dial(b, skills.url)
	}
	parallelRegister(b, clients, n, nestedID, func(i int) string { return bodies[i%len(bodies)] })
	// The index follows the catalog's changes in order: once a skill
	// registered last is found, every earlier one is indexed.
	c := clients[0]
	if err := call(c, rules.FnSkillsRegister, map[string]string{"id": "zz/sentinel", "skill": "# Sentinel\n\nquokkasentinel\n"}); err != nil {
		b.Fatal(err)
	}
	for {
		out, err := c.Trigger(b.Context(), iii.TriggerRequest{FunctionID: "skills::search", Data: mustJSON(map[string]any{"query": "quokkasentinel"})})
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(out), "zz/sentinel") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var i atomic.Int64
	b.Run("skills=10000", func(b *testing.B) {
		measure(b, []func() error{func() error {
			q := queries[int(i.Add(1))%len(queries)]
			return call(c, "skills::search", map[string]any{"query": q, "limit": 10})
		}})
	})
}

// corpusBodies are the SKILL.md files of the corpus, frontmatter kept.
func corpusBodies(b *testing.B) []string {
	b.Helper()
	dirs, err := os.ReadDir(corpusDir)
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(corpusDir, d.Name(), "SKILL.md"))
		if err == nil {
			out = append(out, string(raw))
		}
	}
	return out
}

func evalQueries(b *testing.B) []string {
	b.Helper()
	f, err := os.Open("../search/testdata/eval/queries.tsv")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if q, _, ok := strings.Cut(sc.Text(), "\t"); ok && !strings.HasPrefix(q, "#") {
			out = append(out, q)
		}
	}
	return out
}
