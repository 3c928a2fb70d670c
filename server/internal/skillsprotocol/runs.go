package skillsprotocol

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/sandbox"
)

// Run is what execute_skill and run_code return.
type Run struct {
	Status      string    `json:"status"`
	RunID       string    `json:"run_id"`
	Summary     string    `json:"summary"`
	Output      any       `json:"output"`
	OutputBlobs []string  `json:"output_blobs"`
	LogsPreview string    `json:"logs_preview"`
	Error       *RunError `json:"error,omitempty"`
}

// RunError is why a run failed.
type RunError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Run statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// runStore keeps finished runs for a while (Options.RunRetention, at most
// Options.MaxRuns), so an operator or a later surface can look them up.
type runStore struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	order []string
	runs  map[string]storedRun
}

type storedRun struct {
	run  Run
	done time.Time
}

func newRunStore(ttl time.Duration, max int) *runStore {
	return &runStore{ttl: ttl, max: max, runs: map[string]storedRun{}}
}

func (s *runStore) add(r Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.runs[r.RunID] = storedRun{run: r, done: now}
	s.order = append(s.order, r.RunID)
	for len(s.order) > 0 {
		old := s.runs[s.order[0]]
		if len(s.order) <= s.max && now.Sub(old.done) <= s.ttl {
			break
		}
		delete(s.runs, s.order[0])
		s.order = s.order[1:]
	}
}

// Run returns a finished run kept by the runtime.
func (r *Runtime) Run(id string) (Run, bool) {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	s, ok := r.runs.runs[id]
	if !ok || time.Since(s.done) > r.runs.ttl {
		return Run{}, false
	}
	return s.run, true
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

// runRequest is what the Python runner reads (pylib/sp_runner.py).
type runRequest struct {
	File       string            `json:"file"`
	Entrypoint string            `json:"entrypoint"`
	Args       json.RawMessage   `json:"args"` // an object, passed through undecoded
	Skills     map[string]string `json:"skills"`
	Path       []string          `json:"path"`
	Display    string            `json:"display"`
}

// job is one run to perform.
type job struct {
	display string // "salesforce.leads.sync 1.0.0" or "run_code"
	req     runRequest
	code    string // run_code source, written to /runtime/run/main.py
	mounts  []skillView
	env     map[string]string
	timeout time.Duration
}

func (r *Runtime) timeoutOf(ms *int64) (time.Duration, *Error) {
	if ms == nil {
		return r.opts.DefaultTimeout, nil
	}
	if *ms <= 0 {
		return 0, invalidParams("timeout_ms %d must be a positive number of milliseconds", *ms)
	}
	// Refused, not lowered, like every other out-of-range parameter: the
	// caller learns the bound instead of a run cut short unannounced. The
	// check is on milliseconds, before a huge value could overflow.
	if max := r.opts.MaxTimeout.Milliseconds(); *ms > max {
		return 0, invalidParams("timeout_ms %d is above the maximum of %d ms (%s)", *ms, max, r.opts.MaxTimeout)
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// checkBlobs de-duplicates input_blobs and checks them against the index
// (known, not expired, within MaxInputBlobs and MaxInputBlobBytes) without
// loading any content: that happens one blob at a time in prepare, once
// the run holds a sandbox slot.
func (r *Runtime) checkBlobs(ctx context.Context, ids []string) ([]string, *Error) {
	var out []string
	seen := map[string]bool{}
	var total int64
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
		if len(out) > r.opts.MaxInputBlobs {
			return nil, invalidParams("input_blobs names more than %d distinct blobs; a run takes at most %d", r.opts.MaxInputBlobs, r.opts.MaxInputBlobs)
		}
		size, perr := r.blobSize(ctx, id)
		if perr != nil {
			return nil, perr
		}
		if total += size; total > r.opts.MaxInputBlobBytes {
			return nil, invalidParams("input_blobs hold more than %d bytes together (%d so far, at %s); a run takes at most %d bytes of input blobs",
				r.opts.MaxInputBlobBytes, total, id, r.opts.MaxInputBlobBytes)
		}
	}
	return out, nil
}

// execute runs a job in a fresh sandbox and turns whatever happened into a
// Run. A client (budget.ClientFrom) holding its share of the sandboxes
// waits for its own runs to end while other clients take the rest; one
// with too many runs waiting already is refused CodeServerBusy.
func (r *Runtime) execute(ctx context.Context, j job, blobs []string) (any, *Error) {
	if err := r.sb.Available(); err == nil {
		client := budget.ClientFrom(ctx)
		queued, err := r.runQueue.TryAcquire(client, 1)
		if err != nil {
			return nil, busyError(err)
		}
		defer queued.Release()
		lease, err := r.sandboxes.Acquire(ctx, client, 1, budget.Wait{ForShare: true})
		var ref *budget.Refusal
		switch {
		case errors.As(err, &ref):
			return nil, busyError(err)
		case err != nil:
			run := Run{RunID: newRunID(), OutputBlobs: []string{}, Status: StatusFailed,
				Error: &RunError{Type: "Canceled", Message: "the request was canceled while waiting for a free sandbox"}}
			run.Summary = fmt.Sprintf("%s failed: %s", j.display, run.Error.Type)
			r.runs.add(run)
			return run, nil
		}
		defer lease.Release()
	}
	return r.run(ctx, j, blobs), nil
}

// run runs a job in a fresh sandbox (its slot taken by execute) and turns
// whatever happened into a Run.
func (r *Runtime) run(ctx context.Context, j job, blobs []string) Run {
	run := Run{RunID: newRunID(), OutputBlobs: []string{}}
	fail := func(kind, msg string) Run {
		run.Status, run.Error = StatusFailed, &RunError{Type: kind, Message: msg}
		run.Summary = fmt.Sprintf("%s failed: %s", j.display, kind)
		r.runs.add(run)
		return run
	}
	// failHost is fail for the server's own trouble: its message may name
	// host folders, which the client does not see (the log has them).
	failHost := func(kind, msg string) Run {
		if hidden := hidePaths(msg); hidden != msg {
			r.log.Warn("skills protocol: run failed on the server", "run_id", run.RunID, "type", kind, "err", msg)
			msg = hidden
		}
		return fail(kind, msg)
	}
	if err := r.sb.Available(); err != nil {
		return failHost("SandboxUnavailable", fmt.Sprintf("code execution needs bubblewrap on the server: %v", err))
	}
	dir, err := os.MkdirTemp(r.work, "run-")
	if err != nil {
		return failHost("RuntimeError", fmt.Sprintf("prepare the run folder: %v", err))
	}
	defer os.RemoveAll(dir)
	mounts, err := r.prepare(ctx, dir, j, blobs)
	if err != nil {
		return failHost("RuntimeError", fmt.Sprintf("prepare the sandbox: %v", err))
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/workspace", "LANG": "C.UTF-8"}
	for k, v := range j.env {
		env[k] = v
	}
	limits := r.opts.Limits
	limits.Wall = j.timeout
	// CPU time a little above the wall time: a busy single-threaded loop
	// ends as TimeoutError, several busy threads as CPULimitExceeded.
	if cpu := j.timeout + time.Second; limits.CPU == 0 || limits.CPU > cpu {
		limits.CPU = cpu
	}
	res, err := r.sb.Run(ctx, sandbox.Spec{
		Command: []string{r.opts.Python, "-I", "-S", "/runtime/lib/sp_runner.py", "/runtime/run/request.json"},
		Mounts:  mounts, Env: env, Limits: limits,
	})
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return failHost("SandboxUnavailable", err.Error())
		}
		return failHost("RuntimeError", err.Error())
	}
	logs := string(res.Stderr)
	run.LogsPreview = tailUTF8(logs, LogsPreviewBytes)
	if len(logs) > r.opts.BlobThreshold {
		if rec, perr := r.putBlob(ctx, logs, "text/plain"); perr == nil {
			run.OutputBlobs = append(run.OutputBlobs, rec.ID)
		}
	}
	ms := res.Duration.Milliseconds()
	switch res.Outcome {
	case sandbox.TimedOut:
		return fail("TimeoutError", fmt.Sprintf("the run exceeded its time limit of %d ms and was killed", j.timeout.Milliseconds()))
	case sandbox.OutputExceeded:
		return fail("OutputLimitExceeded", fmt.Sprintf("the run wrote more than %d bytes to stdout or stderr and was killed; write large data to /workspace and return a summary", res.Limits.OutputBytes))
	case sandbox.Canceled:
		return fail("Canceled", "the request was canceled before the run finished")
	case sandbox.MemoryExceeded:
		return fail("MemoryLimitExceeded", fmt.Sprintf("the run used more than %d MiB of memory (all its processes together) and was killed", res.Limits.RunMemoryBytes>>20))
	}
	var doc struct {
		OK     bool            `json:"ok"`
		Output json.RawMessage `json:"output"`
		Error  *RunError       `json:"error"`
	}
	if err := json.Unmarshal(res.Stdout, &doc); err != nil {
		switch {
		case res.Signal == syscall.SIGXCPU.String():
			return fail("CPULimitExceeded", fmt.Sprintf("the run used more than %d s of CPU time", int(res.Limits.CPU/time.Second)))
		case res.Outcome == sandbox.Signaled:
			return fail("Killed", fmt.Sprintf("the run was killed by %s (limits: %d MiB memory, %d processes)", res.Signal, res.Limits.MemoryBytes>>20, res.Limits.Processes))
		case len(res.Stdout) == 0 && strings.HasPrefix(logs, "bwrap: "):
			// bwrap itself failed: typically a kernel or container that
			// forbids unprivileged user namespaces.
			return failHost("SandboxUnavailable", fmt.Sprintf("bubblewrap could not build the sandbox (%s); the kernel must allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1; containers need them allowed by their seccomp profile)", strings.TrimSpace(logs)))
		default:
			return fail("RuntimeError", fmt.Sprintf("the run ended (exit status %d) without a result; see logs_preview", res.ExitCode))
		}
	}
	if !doc.OK {
		e := doc.Error
		if e == nil {
			e = &RunError{Type: "RuntimeError", Message: "the run failed"}
		}
		return fail(e.Type, e.Message)
	}
	run.Status = StatusCompleted
	if len(doc.Output) > r.opts.BlobThreshold {
		rec, perr := r.putBlob(ctx, string(doc.Output), "application/json")
		if perr != nil {
			return fail("OutputTooLarge", perr.Message)
		}
		run.OutputBlobs = append([]string{rec.ID}, run.OutputBlobs...)
		run.Summary = fmt.Sprintf("%s completed in %d ms; its output (%d bytes of JSON) is %s", j.display, ms, len(doc.Output), rec.ID)
	} else {
		run.Output = doc.Output
		run.Summary = fmt.Sprintf("%s completed in %d ms", j.display, ms)
	}
	r.runs.add(run)
	return run
}

// prepare writes the run folder (request, code, blobs) and returns the
// sandbox mounts: /runtime/lib (runner + runtime module), /runtime/run,
// /blobs and /skills/<name> for each mounted skill.
func (r *Runtime) prepare(ctx context.Context, dir string, j job, blobs []string) ([]sandbox.Mount, error) {
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	runDir := filepath.Join(dir, "run")
	blobDir := filepath.Join(dir, "blobs")
	for _, d := range []string{runDir, blobDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if j.code != "" {
		if err := os.WriteFile(filepath.Join(runDir, "main.py"), []byte(j.code), 0o644); err != nil {
			return nil, err
		}
	}
	// One blob in memory at a time: each is written out and dropped
	// before the next is read.
	for _, id := range blobs {
		rec, perr := r.getBlob(ctx, id)
		if perr != nil {
			return nil, errors.New(perr.Message)
		}
		if err := writeString(filepath.Join(blobDir, strings.TrimPrefix(rec.ID, BlobPrefix)), rec.Content); err != nil {
			return nil, err
		}
	}
	req := j.req
	req.Skills = map[string]string{}
	mounts := []sandbox.Mount{
		{Source: filepath.Join(r.work, "lib"), Target: "/runtime/lib"},
		{Source: runDir, Target: "/runtime/run"},
		{Source: blobDir, Target: "/blobs"},
	}
	for _, v := range j.mounts {
		src, err := r.materialize(v)
		if err != nil {
			return nil, err
		}
		entry := ""
		if v.manifest.Runtime != nil {
			entry = v.manifest.Runtime.Entrypoint
			// The entrypoint's folder is importable, so its sibling
			// modules (import helper) load as in the bundle.
			if d := "/skills/" + v.name + "/" + path.Dir(entry); !slices.Contains(req.Path, d) {
				req.Path = append(req.Path, d)
			}
		}
		req.Skills[v.name] = entry
		mounts = append(mounts, sandbox.Mount{Source: src, Target: "/skills/" + v.name})
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return mounts, os.WriteFile(filepath.Join(runDir, "request.json"), raw, 0o644)
}

// writeString writes s to a new file without a []byte copy of it.
func writeString(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// materialize writes a skill version's files once into the work folder
// (keyed by name, version and content digests) and returns the folder.
// Files are written from the catalog's content: a bundle's symlinks never
// reach the sandbox.
func (r *Runtime) materialize(v skillView) (string, error) {
	files := skillFiles(v.e)
	h := catalog.DigestOfString(v.name + "@" + v.version + "|" + digestList(files))
	dst := filepath.Join(r.work, "skills", hex.EncodeToString(h[:12]))
	r.matMu.Lock()
	defer r.matMu.Unlock()
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp := dst + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		if err := checkRelPath(f.Path); err != nil {
			return "", fmt.Errorf("skill %s: %w", v.name, err)
		}
		b, err := f.Content.Bytes()
		if err != nil {
			return "", fmt.Errorf("read %s of %s: %w", f.Path, v.name, err)
		}
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(filepath.Dir(tmp), 0o755); err != nil {
		return "", err
	}
	return dst, os.Rename(tmp, dst)
}

func digestList(files []catalog.File) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.Path)
		b.WriteByte('=')
		b.WriteString(f.Digest.String())
		b.WriteByte(';')
	}
	return b.String()
}

type executeParams struct {
	Name       string          `json:"name"`
	Version    string          `json:"version"`
	Args       json.RawMessage `json:"args"`
	InputBlobs boundedList     `json:"input_blobs"`
	TimeoutMS  *int64          `json:"timeout_ms"`
}

func (r *Runtime) executeSkill(ctx context.Context, p executeParams) (any, *Error) {
	v, perr := r.find(p.Name, p.Version)
	if perr != nil {
		return nil, perr
	}
	if v.manifest.Kind != KindAction || v.manifest.Runtime == nil {
		return nil, invalidParams("skill %s %s is an instruction skill: it has no code to execute (read it with read_skill_file, or use run_code)", v.name, v.version)
	}
	timeout, perr := r.timeoutOf(p.TimeoutMS)
	if perr != nil {
		return nil, perr
	}
	args, perr := argsObject("execute_skill", p.Args)
	if perr != nil {
		return nil, perr
	}
	blobs, perr := r.checkBlobs(ctx, p.InputBlobs)
	if perr != nil {
		return nil, perr
	}
	rt := v.manifest.Runtime
	export := rt.Export
	if export == "" {
		export = "main"
	}
	dir := "/skills/" + v.name
	j := job{
		display: v.name + " " + v.version,
		req: runRequest{File: dir + "/" + rt.Entrypoint, Entrypoint: export, Args: args,
			Display: rt.Entrypoint},
		mounts:  []skillView{v},
		env:     r.secretEnv(v),
		timeout: timeout,
	}
	return r.execute(ctx, j, blobs)
}

type runCodeParams struct {
	Language    string          `json:"language"`
	Code        *string         `json:"code"`
	Entrypoint  string          `json:"entrypoint"`
	Args        json.RawMessage `json:"args"`
	MountSkills boundedList     `json:"mount_skills"`
	InputBlobs  boundedList     `json:"input_blobs"`
	Limits      *struct {
		TimeoutMS *int64 `json:"timeout_ms"`
	} `json:"limits"`
}

func (r *Runtime) runCode(ctx context.Context, p runCodeParams) (any, *Error) {
	if p.Language != "python" {
		return nil, invalidParams(`language %q is not supported (expected "python")`, p.Language)
	}
	if p.Code == nil || strings.TrimSpace(*p.Code) == "" {
		return nil, invalidParams("code is required (Python source defining the entrypoint function, main(args) by default)")
	}
	entry := p.Entrypoint
	if entry == "" {
		entry = "main"
	}
	if !identRe.MatchString(entry) {
		return nil, invalidParams("entrypoint %q must be a Python function name", entry)
	}
	var ms *int64
	if p.Limits != nil {
		ms = p.Limits.TimeoutMS
	}
	timeout, perr := r.timeoutOf(ms)
	if perr != nil {
		return nil, perr
	}
	args, perr := argsObject("run_code", p.Args)
	if perr != nil {
		return nil, perr
	}
	var mounts []skillView
	seen := map[string]bool{}
	for _, spec := range p.MountSkills {
		name, version, _ := strings.Cut(spec, "@")
		v, perr := r.find(name, version)
		if perr != nil {
			return nil, &Error{Code: perr.Code, Message: "mount_skills: " + perr.Message}
		}
		if seen[v.name] {
			return nil, invalidParams("mount_skills names %s twice", v.name)
		}
		seen[v.name] = true
		mounts = append(mounts, v)
	}
	blobs, perr := r.checkBlobs(ctx, p.InputBlobs)
	if perr != nil {
		return nil, perr
	}
	j := job{
		display: "run_code " + entry + "()",
		req:     runRequest{File: "/runtime/run/main.py", Entrypoint: entry, Args: args, Display: "the code"},
		code:    *p.Code,
		mounts:  mounts,
		timeout: timeout,
	}
	return r.execute(ctx, j, blobs)
}

// argsObject checks that args is a JSON object (absent or null: {}). It
// is passed to the runner as it came, never decoded into Go values: 31 MiB
// of [0,0,…] would otherwise become hundreds of megabytes of them.
func argsObject(method string, raw json.RawMessage) (json.RawMessage, *Error) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || bytes.Equal(t, []byte("null")):
		return json.RawMessage("{}"), nil
	case t[0] != '{':
		return nil, invalidParams("%s: parameter \"args\" must be an object, got %s", method, jsonKind(t[0]))
	}
	return t, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// maxListEntries bounds the entries of input_blobs and mount_skills as
// sent, repeats included (input_blobs is de-duplicated and capped after).
const maxListEntries = 1000

// boundedList is a JSON array of strings of at most maxListEntries
// entries, decoded one entry at a time so that an oversized list is
// refused before it is built.
type boundedList []string

func (l *boundedList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*l = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return &json.UnmarshalTypeError{Value: "another JSON value", Type: reflect.TypeOf([]string(nil))}
	}
	var out []string
	for dec.More() {
		if len(out) == maxListEntries {
			return &json.UnmarshalTypeError{Value: fmt.Sprintf("an array of more than %d entries (at most %d, repeats included)", maxListEntries, maxListEntries),
				Type: reflect.TypeOf([]string(nil))}
		}
		var s string
		if err := dec.Decode(&s); err != nil {
			return &json.UnmarshalTypeError{Value: "an array with an entry that is not a string", Type: reflect.TypeOf([]string(nil))}
		}
		out = append(out, s)
	}
	*l = out
	return nil
}
