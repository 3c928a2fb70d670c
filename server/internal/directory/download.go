package directory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
)

// ErrNoFolder is returned by download when no skills_folder is configured.
var ErrNoFolder = errors.New("skills_folder is not configured: set skills_folder in config.yaml or pass --skills-folder")

type downloadInput struct {
	Repo, Skill, Branch, Worker, Version, Tag string
}

// downloadResult is the download response.
type downloadResult struct {
	Namespace      string         `json:"namespace"`
	SkillsWritten  []string       `json:"skills_written"`
	PromptsWritten []string       `json:"prompts_written"`
	Source         map[string]any `json:"source"`
}

func (d *Directory) download(ctx context.Context, data json.RawMessage) (any, error) {
	// A download writes into the operator's skills folder, whose files are
	// served with the operator's trust under whatever ids they declare
	// (a skill.toml's bundle name, a prompt's name), not only under the
	// namespace folder it lands in: no namespace bound can hold it, so a
	// scoped token may not download at all.
	if c, ok := d.stamped.Caller(ctx); ok && c.Scoped() {
		return nil, c.Forbidden(fmt.Sprintf("token %q (scoped to %s) cannot call %s: a download writes into the operator's skills folder, served with the operator's trust under any id its files declare; scoped tokens publish with %s and %s",
			c.Token, strings.Join(c.Namespaces, ", "), FnSkillsDownload, rules.FnSkillsRegister, rules.FnPublishBundle))
	}
	var raw struct {
		Repo    *string `json:"repo"`
		Skill   *string `json:"skill"`
		Branch  *string `json:"branch"`
		Worker  *string `json:"worker"`
		Version *string `json:"version"`
		Tag     *string `json:"tag"`
	}
	if err := decode(data, "DownloadInput", &raw); err != nil {
		return nil, err
	}
	t := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	in := downloadInput{t(raw.Repo), t(raw.Skill), t(raw.Branch), t(raw.Worker), t(raw.Version), t(raw.Tag)}
	repoGroup := in.Repo != "" || in.Skill != "" || in.Branch != ""
	registryGroup := in.Worker != "" || in.Version != "" || in.Tag != ""
	switch {
	case repoGroup && registryGroup:
		return nil, invalidArguments(errors.New(msgDownloadBoth))
	case !repoGroup && !registryGroup:
		return nil, invalidArguments(errors.New(msgDownloadNeither))
	case repoGroup && in.Repo == "":
		return nil, invalidArguments(errors.New(msgRepoRequired))
	case repoGroup && in.Skill == "":
		return nil, invalidArguments(errors.New(msgSkillRequired))
	case registryGroup && in.Worker == "":
		return nil, invalidArguments(errors.New(msgWorkerRequired))
	case in.Version != "" && in.Tag != "":
		return nil, invalidArguments(errors.New(msgVersionOrTag))
	}
	if d.set == nil || d.set.First() == "" {
		return nil, ErrNoFolder
	}
	root := d.set.First()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf(fmtCreateDir, root, err)
	}
	var res *downloadResult
	var err error
	if repoGroup {
		branch := in.Branch
		if branch == "" { // blank counts as absent
			branch = "main"
		}
		res, err = d.fromGit(ctx, root, in.Repo, in.Skill, branch)
	} else {
		res, err = d.fromRegistry(ctx, root, in.Worker, in.Version, in.Tag)
	}
	if err != nil {
		return nil, err
	}
	// Serve what was written before answering, then tell the subscribers.
	d.set.Refresh(root)
	src, _ := res.Source["kind"].(string)
	ev := DownloadChange{Namespace: res.Namespace, Op: "download", Source: src}
	if len(res.SkillsWritten) > 0 {
		d.fire(d.skillSubs, ev)
	}
	if len(res.PromptsWritten) > 0 {
		d.fire(d.promptSubs, ev)
	}
	return res, nil
}

// writeFile writes rel under root through os.Root (nothing can land
// outside it), via <file>.tmp and a rename, creating parent folders.
func writeFile(r *os.Root, rel string, content []byte) error {
	if dir := path.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := rel + ".tmp"
	if err := r.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	return r.Rename(tmp, rel)
}

// ---- registry source ----

func validateWorkerName(name string) error {
	if name == "" {
		return errors.New(msgWorkerNameEmpty)
	}
	c := name[0]
	if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
		return fmt.Errorf(fmtWorkerNameStart, rules.RustQuote(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf(fmtWorkerNameChars, rules.RustQuote(name))
		}
	}
	return nil
}

// safeRelPath checks a registry skill path and drops its "./" parts.
func safeRelPath(raw string) (string, error) {
	if raw == "" {
		return "", errors.New(msgPathEmpty)
	}
	q := rules.RustQuote(raw)
	if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "\\") {
		return "", fmt.Errorf(fmtPathAbsolute, q)
	}
	if len(raw) >= 2 && raw[1] == ':' {
		return "", fmt.Errorf(fmtPathPrefix, q)
	}
	var parts []string
	for _, p := range strings.FieldsFunc(raw, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch p {
		case ".":
			continue
		case "..":
			return "", fmt.Errorf(fmtPathDotDot, q)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf(fmtPathResolvedEmpty, q)
	}
	return strings.Join(parts, "/"), nil
}

type registryBundle struct {
	Name    *string `json:"name"`
	Version any     `json:"version"`
	Skills  []struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	} `json:"skills"`
	Prompts []struct {
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		ArgsSchema  json.RawMessage `json:"args_schema"`
		Content     string          `json:"content"`
	} `json:"prompts"`
}

func (d *Directory) fromRegistry(ctx context.Context, root, worker, version, tag string) (*downloadResult, error) {
	if err := validateWorkerName(worker); err != nil {
		return nil, invalidArguments(err)
	}
	k, v, _ := selector(version, tag)
	u := d.cfg.RegistryURL + "/w/" + worker + "/skills?" + k + "=" + v
	if err := d.downloadHosts.checkURL(u); err != nil {
		return nil, refusal(err)
	}
	var b registryBundle
	if err := d.getJSONWith(ctx, d.downloadHTTP, u, &b); err != nil {
		return nil, refusal(err) // a redirect to a host not allowed
	}
	if b.Name != nil && *b.Name != worker {
		return nil, fmt.Errorf(fmtRegistryName, rules.RustQuote(*b.Name), rules.RustQuote(worker))
	}
	res := &downloadResult{Namespace: worker, SkillsWritten: []string{}, PromptsWritten: []string{},
		Source: map[string]any{"kind": "registry", "worker": worker, k: v}}
	var planned []plannedFile
	for _, s := range b.Skills {
		rel, err := safeRelPath(s.Path)
		if err != nil {
			return nil, fmt.Errorf(fmtInvalidSkillPath, rules.RustQuote(s.Path), err)
		}
		planned = append(planned, plannedFile{rel: rel, content: []byte(s.Content), digest: sha256Of([]byte(s.Content))})
		res.SkillsWritten = append(res.SkillsWritten, rel)
	}
	for _, p := range b.Prompts {
		if err := registry.ValidateName(p.Name); err != nil {
			return nil, fmt.Errorf(fmtInvalidPrompt, rules.RustQuote(p.Name), err)
		}
		content, err := promptFile(p.Name, p.Description, p.ArgsSchema, p.Content)
		if err != nil {
			return nil, err
		}
		planned = append(planned, plannedFile{rel: "prompts/" + p.Name + ".md", content: content, digest: sha256Of(content)})
		res.PromptsWritten = append(res.PromptsWritten, p.Name)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf(fmtCreateDir, root, err)
	}
	defer r.Close()
	if err := d.writeNamespace(r, root, worker, planned, res.Source); err != nil {
		return nil, err
	}
	return res, nil
}

// promptFile renders a downloaded prompt: YAML frontmatter with name,
// description (trimmed) and args_schema (when present), then the content
// ending in a newline.
func promptFile(name string, desc *string, args json.RawMessage, content string) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	add("name", str(name))
	d := ""
	if desc != nil {
		d = strings.TrimSpace(*desc)
	}
	add("description", str(d))
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, fmt.Errorf("invalid args_schema of prompt %s: %w", rules.RustQuote(name), err)
		}
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			return nil, fmt.Errorf("invalid args_schema of prompt %s: %w", rules.RustQuote(name), err)
		}
		add("args_schema", &n)
	}
	y, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return []byte("---\n" + strings.TrimRight(string(y), "\n") + "\n---\n" + content), nil
}

// ---- git source ----

func validateGitSkill(s string) error {
	q := rules.RustQuote(s)
	switch {
	case s == "":
		return errors.New(msgGitSkillEmpty)
	case strings.ContainsAny(s, "/\\"):
		return fmt.Errorf(fmtGitSkillSlash, q)
	case strings.Contains(s, ".."):
		return fmt.Errorf(fmtGitSkillDotDot, q)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf(fmtGitSkillChars, q)
		}
	}
	if strings.HasPrefix(s, ".") {
		return fmt.Errorf(fmtGitSkillDot, q)
	}
	return nil
}

func validateRepo(repo string) error {
	q := rules.RustQuote(repo)
	switch {
	case repo == "":
		return errors.New(msgRepoEmpty)
	case strings.HasPrefix(repo, "-"):
		return fmt.Errorf(fmtRepoDash, q)
	case strings.Contains(repo, "::"):
		return fmt.Errorf(fmtRepoDoubleColon, q)
	case strings.HasPrefix(strings.ToLower(repo), "file:"):
		return fmt.Errorf(fmtRepoFileURL, q)
	case !strings.HasPrefix(repo, "https://") && !strings.HasPrefix(repo, "ssh://") && !strings.HasPrefix(repo, "git@"):
		return fmt.Errorf(fmtRepoScheme, q)
	}
	return nil
}

func (d *Directory) fromGit(ctx context.Context, root, repo, skill, branch string) (*downloadResult, error) {
	if err := validateGitSkill(skill); err != nil {
		return nil, invalidArguments(err)
	}
	if err := validateRepo(repo); err != nil {
		return nil, invalidArguments(err)
	}
	if branch == "" {
		return nil, invalidArguments(errors.New(msgBranchEmpty))
	}
	if err := d.downloadHosts.checkRepo(repo); err != nil {
		if r := refusal(err); r != err {
			return nil, r
		}
		return nil, invalidArguments(err) // a repo URL git would read another way
	}
	tmp, err := os.MkdirTemp("", "iii-directory-clone-")
	if err != nil {
		return nil, fmt.Errorf(fmtGitSpawn, err)
	}
	defer os.RemoveAll(tmp)
	cctx, cancel := context.WithTimeout(ctx, d.cfg.DownloadTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, d.opts.Git, "-c", "protocol.ext.allow=never", "-c", "http.followRedirects=false", "clone", "--depth", "1", "--branch", branch, "--quiet", repo, tmp)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PROTOCOL_FROM_USER=0")
	cmd.Env = append(cmd.Env, d.opts.GitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if cctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf(fmtGitTimeout, d.cfg.DownloadTimeout.Milliseconds())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf(fmtGitExit, branch, ee.ProcessState.String(), strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf(fmtGitSpawn, err)
	}
	srcDir := filepath.Join(tmp, "skills", skill)
	fi, err := os.Lstat(srcDir)
	switch {
	case err != nil:
		return nil, notFound(fmt.Errorf(fmtGitNoFolder, rules.RustQuote(repo), skill, tmp))
	case !fi.IsDir():
		return nil, fmt.Errorf(fmtGitNotDir, skill, rules.RustQuote(repo))
	}
	res := &downloadResult{Namespace: skill, SkillsWritten: []string{}, PromptsWritten: []string{},
		Source: map[string]any{"kind": "repo", "repo": repo, "skill": skill, "branch": branch}}
	// Only regular files are copied (symlinks in the clone are not
	// followed); names starting with '.' and non-UTF-8 names are skipped.
	var planned []plannedFile
	clone := os.DirFS(srcDir)
	err = filepath.WalkDir(srcDir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == srcDir {
			return nil
		}
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(name) {
			d.log.Warn("download: skipping a non-UTF-8 file name", "path", p)
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() || !de.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(srcDir, p)
		rel = filepath.ToSlash(rel)
		digest, err := sha256OfFile(clone, rel)
		if err != nil {
			return err
		}
		planned = append(planned, plannedFile{rel: rel, src: p, digest: digest})
		if strings.HasSuffix(rel, ".md") && isPromptRel(rel) {
			res.PromptsWritten = append(res.PromptsWritten, strings.TrimSuffix(path.Base(rel), ".md"))
		} else {
			res.SkillsWritten = append(res.SkillsWritten, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf(fmtCreateDir, root, err)
	}
	defer r.Close()
	if err := d.writeNamespace(r, root, skill, planned, res.Source); err != nil {
		return nil, err
	}
	return res, nil
}

func isPromptRel(rel string) bool {
	for _, c := range strings.Split(path.Dir(rel), "/") {
		if c == "prompts" {
			return true
		}
	}
	return false
}
