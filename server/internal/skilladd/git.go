package skilladd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/skillarchive"
)

// gitConfig is given to every git command: no transport that runs a
// program (ext::, fd::), file:// only for a repository the user named by
// its path, no hooks, no submodules, no file-system monitor.
func gitConfig(allowFile bool) []string {
	file := "never"
	if allowFile {
		file = "always"
	}
	return []string{
		"-c", "protocol.allow=never",
		"-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always",
		"-c", "protocol.ssh.allow=always", "-c", "protocol.git.allow=always",
		"-c", "protocol.file.allow=" + file,
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "submodule.recurse=false",
		"-c", "fetch.recurseSubmodules=false",
	}
}

// gitRun is one git command in a repository folder.
type gitRun struct {
	git       string
	env       []string
	repo      string
	allowFile bool
	secret    string // credentials in the URL, never printed
}

func (g *gitRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, g.git, append(gitConfig(g.allowFile), args...)...)
	cmd.Dir = g.repo
	allowed := "https:http:ssh:git"
	if g.allowFile {
		allowed += ":file"
	}
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL="+allowed,
		"GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C", "GIT_CONFIG_PARAMETERS=")
	cmd.Env = append(cmd.Env, g.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs git and returns its stdout, or an error with its stderr
// (credentials masked).
func (g *gitRun) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := g.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, g.failure(ctx, args, err, errb.String())
	}
	return out.Bytes(), nil
}

func (g *gitRun) failure(ctx context.Context, args []string, err error, stderr string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := strings.TrimSpace(stderr)
	if g.secret != "" {
		msg = strings.ReplaceAll(msg, g.secret, "***")
	}
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("git %s: %s", args[0], msg)
}

// gitTree is what a fetch found.
type gitTree struct {
	files  []skillarchive.File
	commit string
}

// fetchGit fetches one commit of src (no checkout: nothing of the
// repository is ever written as files by git) and reads the tree at
// src.Subdir through a Collector, the same rules as an archive.
func fetchGit(ctx context.Context, src Source, o *Options) (*gitTree, error) {
	tmp, err := os.MkdirTemp("", "skills-add-git-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(ctx, o.gitTimeout())
	defer cancel()
	g := &gitRun{git: o.gitBinary(), env: o.GitEnv, repo: tmp, allowFile: src.Path != ""}
	if u, err := urlUser(src.URL); err == nil {
		g.secret = u
	}
	where := src.Where()
	if _, err := g.output(ctx, "init", "--bare", "--quiet", "--template="); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	ref := src.Ref
	if ref == "" {
		ref = "HEAD"
	}
	tooBig := watchSize(ctx, tmp, o.maxDownload(), cancel)
	_, err = g.output(ctx, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--depth=1", "--", src.URL, ref)
	if tooBig.Load() || dirSize(tmp) > o.maxDownload() {
		return nil, fmt.Errorf("%s: the repository is larger than %d bytes at depth 1 (--max-download); name a smaller repository, or raise the cap", where, o.maxDownload())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s: git fetch did not finish within %v (--timeout)", where, o.gitTimeout())
	}
	if err != nil {
		if strings.Contains(err.Error(), "couldn't find remote ref") || strings.Contains(err.Error(), "not our ref") {
			return nil, fmt.Errorf("%s: the repository has no ref %q: %w", where, src.Ref, err)
		}
		return nil, fmt.Errorf("%s: cannot fetch %s: %w", where, src.Shown, err)
	}
	out, err := g.output(ctx, "rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("%s: %q does not name a commit: %w", where, ref, err)
	}
	commit := strings.TrimSpace(string(out))
	treeish := commit
	if src.Subdir != "" {
		treeish += ":" + src.Subdir
		if out, err := g.output(ctx, "cat-file", "-t", treeish); err != nil || strings.TrimSpace(string(out)) != "tree" {
			return nil, fmt.Errorf("%s: the repository has no folder %s at commit %s", where, src.Subdir, commit)
		}
	}
	listing, err := g.output(ctx, "ls-tree", "-r", "-l", "-z", treeish)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	files, err := readGitTree(ctx, g, src, commit, listing, o)
	if err != nil {
		return nil, err
	}
	return &gitTree{files: files, commit: commit}, nil
}

// urlUser is the userinfo of a URL with a password or token, "" else.
func urlUser(raw string) (string, error) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", errors.New("no scheme")
	}
	rest := raw[i+3:]
	at := strings.IndexByte(rest, '@')
	slash := strings.IndexByte(rest, '/')
	if at < 0 || slash >= 0 && at > slash {
		return "", errors.New("no userinfo")
	}
	return rest[:at], nil
}

// watchSize cancels when dir grows past max bytes (a repository too large
// to fetch), and reports that it did.
func watchSize(ctx context.Context, dir string, max int64, cancel func()) *atomic.Bool {
	var over atomic.Bool
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if dirSize(dir) > max {
				over.Store(true)
				cancel()
				return
			}
		}
	}()
	return &over
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// treeEntry is one line of git ls-tree -r -l -z.
type treeEntry struct {
	mode, kind, oid string
	size            int64
	path            string
}

func parseLsTree(listing []byte) ([]treeEntry, error) {
	var out []treeEntry
	for _, rec := range bytes.Split(listing, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("git ls-tree printed %q, expected <mode> <type> <object> <size>\\t<path>", rec)
		}
		size := int64(-1)
		if f[3] != "-" {
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("git ls-tree printed the size %q", f[3])
			}
			size = n
		}
		out = append(out, treeEntry{mode: f[0], kind: f[1], oid: f[2], size: size, path: string(p)})
	}
	return out, nil
}

// readGitTree feeds a tree's entries to a Collector; the blobs it keeps
// are read in one git cat-file --batch.
func readGitTree(ctx context.Context, g *gitRun, src Source, commit string, listing []byte, o *Options) ([]skillarchive.File, error) {
	entries, err := parseLsTree(listing)
	if err != nil {
		return nil, err
	}
	opts := o.readOptions(src.Shown+"@"+commit+subdirSuffix(src.Subdir), "repository")
	c := skillarchive.NewCollector(opts)
	// Which blobs to read: those whose names pass and are not skipped.
	var want []treeEntry
	for _, e := range entries {
		name, err := skillarchive.CleanName(e.path)
		if err != nil || name == "" || opts.Skip(name) || e.kind != "blob" {
			continue
		}
		if e.mode == "120000" && e.size > 4096 {
			continue // refused below without reading
		}
		if e.size > c.Limits().MaxFileBytes {
			continue // refused below without reading
		}
		want = append(want, e)
	}
	blobs, wait, err := catFile(ctx, g, want)
	if err != nil {
		return nil, err
	}
	defer wait()
	modules := submoduleURLs(ctx, g, commit)
	for _, e := range entries {
		if err := feedEntry(c, e, blobs, modules, src.Subdir); err != nil {
			return nil, err
		}
	}
	return c.Files()
}

func subdirSuffix(sub string) string {
	if sub == "" {
		return ""
	}
	return ":" + sub
}

// blobReader hands out the blobs of a running git cat-file --batch in the
// order they were asked for.
type blobReader struct {
	r    *bufio.Reader
	next []treeEntry
}

// take returns e's content if it is the next blob, else nil.
func (b *blobReader) take(e treeEntry) (io.Reader, error) {
	if len(b.next) == 0 || b.next[0].path != e.path {
		return nil, nil
	}
	b.next = b.next[1:]
	header, err := b.r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %v", err)
	}
	f := strings.Fields(header)
	if len(f) != 3 || f[0] != e.oid || f[1] != "blob" {
		return nil, fmt.Errorf("git cat-file answered %q for %s", strings.TrimSpace(header), e.oid)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n != e.size {
		return nil, fmt.Errorf("git cat-file answered %q for %s of %d bytes", strings.TrimSpace(header), e.oid, e.size)
	}
	return &blobBody{r: b.r, left: n}, nil
}

// blobBody is one blob's bytes; finish skips what was not read and the
// newline after them.
type blobBody struct {
	r    *bufio.Reader
	left int64
}

func (b *blobBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *blobBody) finish() error {
	if _, err := io.CopyN(io.Discard, b.r, b.left); err != nil {
		return err
	}
	b.left = 0
	_, err := b.r.ReadByte()
	return err
}

// catFile starts git cat-file --batch for the blobs of want.
func catFile(ctx context.Context, g *gitRun, want []treeEntry) (*blobReader, func(), error) {
	if len(want) == 0 {
		return &blobReader{}, func() {}, nil
	}
	cmd := g.command(ctx, "cat-file", "--batch")
	var stdin bytes.Buffer
	for _, e := range want {
		stdin.WriteString(e.oid + "\n")
	}
	cmd.Stdin = &stdin
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("git cat-file: %v", err)
	}
	wait := func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}
	return &blobReader{r: bufio.NewReaderSize(out, 64<<10), next: want}, wait, nil
}

// submoduleURLs maps the paths of a commit's submodules to their URLs
// (from .gitmodules), for the message that refuses them.
func submoduleURLs(ctx context.Context, g *gitRun, commit string) map[string]string {
	out, err := g.output(ctx, "config", "--blob", commit+":.gitmodules", "--get-regexp", `^submodule\..*\.(path|url)$`)
	if err != nil {
		return nil
	}
	paths, urls := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(key, ".path"):
			paths[strings.TrimSuffix(key, ".path")] = val
		case strings.HasSuffix(key, ".url"):
			urls[strings.TrimSuffix(key, ".url")] = val
		}
	}
	m := map[string]string{}
	for name, p := range paths {
		m[p] = urls[name]
	}
	return m
}

// feedEntry hands one tree entry to the Collector.
func feedEntry(c *skillarchive.Collector, e treeEntry, blobs *blobReader, modules map[string]string, subdir string) error {
	switch {
	case e.mode == "160000":
		what := "a git submodule (commit " + e.oid
		if u, ok := modules[path.Join(subdir, e.path)]; ok && u != "" {
			what += ", url " + strconv.Quote(u) + " in .gitmodules"
		}
		return c.Refuse(e.path, what+"): submodules are never fetched; add that repository on its own, or name a :subfolder without it")
	case e.kind != "blob":
		return c.Special(e.path, "a git "+e.kind)
	}
	body, err := blobs.take(e)
	if err != nil {
		return err
	}
	var r io.Reader = strings.NewReader("")
	if body != nil {
		r = body
	}
	switch e.mode {
	case "120000":
		if body == nil {
			if e.size > 4096 {
				return c.Special(e.path, fmt.Sprintf("a symbolic link whose target is %d bytes long", e.size))
			}
			return c.Symlink(e.path, "") // skipped, or refused by its name
		}
		target, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if err := body.(*blobBody).finish(); err != nil {
			return err
		}
		return c.Symlink(e.path, string(target))
	case "100644", "100664", "100755":
		err := c.File(e.path, e.size, e.mode == "100755", r)
		if body != nil {
			if ferr := body.(*blobBody).finish(); err == nil && ferr != nil {
				return ferr
			}
		}
		return err
	}
	return c.Special(e.path, "a git entry of mode "+e.mode)
}
