package history

import (
	"fmt"
	"strings"
)

// contextLines is how many unchanged lines surround a hunk, like diff -u.
const contextLines = 3

// maxDiffEdits bounds the edit distance Unified works out; content that
// differs more is shown as a whole replacement (Myers' algorithm costs
// O((N+M)·D) time and O(D²) memory in the edit distance D: here at most
// a few MiB).
const maxDiffEdits = 1000

// Unified renders a unified diff (diff -u) of a into b, with fromName and
// toName in the --- and +++ lines. Equal inputs give "".
func Unified(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	ops := diffLines(x, y)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", fromName, toName)
	// Group the edit script into hunks with context.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-contextLines, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*contextLines {
				end = min(end+contextLines, len(ops))
				break
			}
			end = run
		}
		writeHunk(&sb, ops[start:end])
		i = end
	}
	return sb.String()
}

type lineOp struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int // 0-based line numbers in a and b before this op
}

func writeHunk(sb *strings.Builder, ops []lineOp) {
	var na, nb int
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(ops[0].ai, na), hunkRange(ops[0].bi, nb))
	for _, o := range ops {
		sb.WriteByte(o.kind)
		sb.WriteString(o.text)
		if !strings.HasSuffix(o.text, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after every "\n"; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// diffLines is Myers' O(ND) diff: the shortest edit script from x to y.
func diffLines(x, y []string) []lineOp {
	// Common prefix and suffix need no search.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	var ops []lineOp
	for i := 0; i < pre; i++ {
		ops = append(ops, lineOp{' ', x[i], i, i})
	}
	mid := myers(x[pre:len(x)-suf], y[pre:len(y)-suf], pre, pre)
	ops = append(ops, mid...)
	for k := 0; k < suf; k++ {
		i, j := len(x)-suf+k, len(y)-suf+k
		ops = append(ops, lineOp{' ', x[i], i, j})
	}
	return ops
}

func myers(x, y []string, ax, by int) []lineOp {
	n, m := len(x), len(y)
	replace := func() []lineOp {
		ops := make([]lineOp, 0, n+m)
		for i, l := range x {
			ops = append(ops, lineOp{'-', l, ax + i, by})
		}
		for j, l := range y {
			ops = append(ops, lineOp{'+', l, ax + n, by + j})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return replace()
	}
	maxD := min(n+m, maxDiffEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		// v before step d, for k in [-d-1, d+1]: all the walk back reads.
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = v[off+k+1]
			} else {
				i = v[off+k-1] + 1
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i++
				j++
			}
			v[off+k] = i
			if i >= n && j >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return replace()
	}
	// Walk the trace back from (n, m).
	var rev []lineOp
	i, j := n, m
	for d := len(trace) - 1; d > 0; d-- {
		pv := func(k int) int { return trace[d][k+d+1] }
		k := i - j
		var pk int
		if k == -d || (k != d && pv(k-1) < pv(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		pi := pv(pk)
		pj := pi - pk
		for i > pi && j > pj && i > 0 && j > 0 && x[i-1] == y[j-1] {
			i--
			j--
			rev = append(rev, lineOp{' ', x[i], ax + i, by + j})
		}
		if i == pi {
			j--
			rev = append(rev, lineOp{'+', y[j], ax + i, by + j})
		} else {
			i--
			rev = append(rev, lineOp{'-', x[i], ax + i, by + j})
		}
	}
	for i > 0 && j > 0 {
		i--
		j--
		rev = append(rev, lineOp{' ', x[i], ax + i, by + j})
	}
	ops := make([]lineOp, len(rev))
	for k := range rev {
		ops[k] = rev[len(rev)-1-k]
	}
	return ops
}
