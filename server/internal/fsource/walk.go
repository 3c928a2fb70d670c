package fsource

// The walk: finding skill files, skill folders, bundles and prompts, and
// loading what it found in parallel.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// walk scans rel, a file or a folder.
func (f *folder) walk(rel string) {
	r := f.fsRoot.Load()
	fi, err := r.Lstat(fsName(rel))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.problem(rel, f.reason(err))
		}
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		st, err := r.Stat(fsName(rel))
		switch {
		case err != nil:
			f.problem(rel, f.reason(err))
		case st.IsDir():
			f.problem(rel, msgSymlinkDir)
		case st.Mode().IsRegular():
			f.classify(rel)
		}
		return
	}
	if fi.IsDir() {
		f.walkDir(rel)
		return
	}
	if fi.Mode().IsRegular() {
		f.classify(rel)
	}
}

func (f *folder) walkDir(rel string) {
	r := f.fsRoot.Load()
	entries, err := fs.ReadDir(r.FS(), fsName(rel))
	if err != nil {
		f.problem(rel, f.reason(err))
		return
	}
	f.watch(f.abs(rel))
	if rel != "" {
		if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == BundleManifest }) {
			f.jobs = append(f.jobs, job{kind: unitBundle, path: rel})
			return
		}
		// Another letter case of SKILL.md under prompts/ stays a prompt.
		if name := skillFileIn(entries); name == SkillFile || name != "" && !isPromptPath(joinRel(rel, name)) {
			f.jobs = append(f.jobs, job{kind: unitSkillDir, path: rel, file: name})
			return
		}
	}
	for _, e := range entries {
		if isIgnored(e.Name()) {
			continue
		}
		child := joinRel(rel, e.Name())
		switch {
		case e.IsDir():
			f.walkDir(child)
		case e.Type()&fs.ModeSymlink != 0:
			f.walk(child)
		case e.Type().IsRegular():
			f.classify(child)
		}
	}
}

// skillFileIn names the skill file among a folder's entries: SKILL.md,
// else another letter case of it (skill.md first), else "".
func skillFileIn(entries []fs.DirEntry) string {
	found := ""
	for _, e := range entries {
		switch n := e.Name(); {
		case n == SkillFile:
			return n
		case !isSkillFileName(n):
		case found == "" || n == "skill.md":
			found = n
		}
	}
	return found
}

// classify loads a regular file outside skill folders.
func (f *folder) classify(rel string) {
	if isIgnored(path.Base(rel)) || path.Ext(rel) != ".md" {
		return
	}
	if isSkillFileName(rel) {
		// The user pointed the registry at one skill's folder: serving
		// the file as a skill named "skill" would hide the mistake.
		f.problem(rel, fmt.Sprintf(fmtRootSkillFile, rel))
		return
	}
	if isPromptPath(rel) {
		f.jobs = append(f.jobs, job{kind: unitPrompt, path: rel})
		return
	}
	f.jobs = append(f.jobs, job{kind: unitFile, path: rel})
}

// job is a file or skill folder found by the walk, loaded in parallel.
type job struct {
	kind unitKind
	path string
	// file is the skill file's name in an Agent Skills folder (SKILL.md,
	// or another letter case of it).
	file string
}

// scanOut collects what loading one job found.
type scanOut struct {
	units    []*unit
	problems [][2]string // path, reason
	warnings [][2]string // path, caveat of something served
	// sub is a root of folder subDir, shared by the jobs of one folder.
	sub    *os.Root
	subDir string
}

func (o *scanOut) problem(rel, reason string) {
	o.problems = append(o.problems, [2]string{rel, reason})
}

func (o *scanOut) add(u *unit) { o.units = append(o.units, u) }

// runJobs loads the walk's jobs on several goroutines (reading files is
// mostly system calls, which overlap well) and applies the results in
// walk order, so the outcome does not depend on scheduling.
func (f *folder) runJobs() {
	jobs := f.jobs
	f.jobs = nil
	outs := make([]scanOut, len(jobs))
	workers := min(max(4, 2*runtime.GOMAXPROCS(0)), len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sub *os.Root // this goroutine's root of the last folder it read
			subDir := ""
			defer func() {
				if sub != nil {
					_ = sub.Close()
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				o := &outs[i]
				if j := jobs[i]; j.kind == unitFile || j.kind == unitPrompt {
					if dir := path.Dir(j.path); dir != "." && dir != subDir {
						if sub != nil {
							_ = sub.Close()
						}
						sub, subDir = nil, dir
						if r := f.fsRoot.Load(); r != nil {
							sub, _ = r.OpenRoot(dir) // on failure: read through the folder root
						}
					}
					if path.Dir(j.path) == subDir {
						o.sub, o.subDir = sub, subDir
					}
				}
				switch j := jobs[i]; j.kind {
				case unitFile:
					f.loadFileSkill(o, j.path)
				case unitPrompt:
					f.loadPrompt(o, j.path)
				case unitSkillDir:
					f.loadSkillDir(o, j.path, j.file)
				case unitBundle:
					f.loadBundle(o, j.path)
				}
			}
		}()
	}
	wg.Wait()
	downloaded := map[string]bool{} // namespace folder → filled by a download
	for _, o := range outs {
		for _, p := range o.problems {
			f.problems[p[0]] = p[1]
		}
		for _, w := range o.warnings {
			f.warnings[w[0]] = append(f.warnings[w[0]], w[1])
		}
		for _, u := range o.units {
			if ns := f.downloadNamespace(u, downloaded); ns != "" {
				if why := markDownloaded(u, ns); why != "" {
					f.problem(u.path, why)
					continue
				}
			}
			f.add(u)
		}
	}
}
