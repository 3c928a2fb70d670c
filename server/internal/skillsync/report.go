package skillsync

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Problem is something that keeps a run from being in sync: it names the
// skill and, where it applies, the target folder and the file.
type Problem struct {
	Skill, Target, File string
	Msg                 string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Skill != "" {
		b.WriteString(p.Skill)
	}
	if p.Target != "" {
		fmt.Fprintf(&b, " in %s", p.Target)
	}
	if p.File != "" {
		fmt.Fprintf(&b, ", file %s", p.File)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Report is what a run did and what kept it from being in sync.
type Report struct {
	mu sync.Mutex
	// Written and Removed name each skill folder written or removed
	// ("name in target"); Unchanged counts the skills already in place.
	Written, Removed []string
	Unchanged        int
	Problems         []Problem
	Notes            []string
	// LockWritten is true when the run rewrote the lock.
	LockWritten bool
	// Log, when set, gets a line for each thing done as it happens.
	Log io.Writer
}

// InSync reports whether the run ended with nothing left to fix.
func (r *Report) InSync() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.Problems) == 0
}

func (r *Report) problem(p Problem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Problems = append(r.Problems, p)
}

func (r *Report) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Report) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

func (r *Report) written(name, target, what string) {
	r.mu.Lock()
	r.Written = append(r.Written, name+" in "+target)
	r.mu.Unlock()
	if what != "" {
		what = " (" + what + ")"
	}
	r.logf("wrote %s → %s%s", name, target, what)
}

func (r *Report) removed(name, target string) {
	r.mu.Lock()
	r.Removed = append(r.Removed, name+" in "+target)
	r.mu.Unlock()
	r.logf("removed %s from %s", name, target)
}

// Summary is one line: what was written, removed, left as it was, and
// how many problems remain.
func (r *Report) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d written, %d removed, %d unchanged, %d problem(s)", len(r.Written), len(r.Removed), r.Unchanged, len(r.Problems))
}

// sortProblems orders problems by skill, target and file, for output that
// is the same from run to run.
func (r *Report) sortProblems() {
	r.mu.Lock()
	defer r.mu.Unlock()
	sort.SliceStable(r.Problems, func(i, j int) bool {
		a, b := r.Problems[i], r.Problems[j]
		if a.Skill != b.Skill {
			return a.Skill < b.Skill
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.File < b.File
	})
}
