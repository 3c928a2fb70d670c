package skillsync

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Agent is where one agent reads skills: a folder of the project (Project,
// relative to the project's root) and one of the user (User, for every
// project).
type Agent struct {
	Name    string // as --agent takes it
	Display string
	Project string
	// User is the user folder: "~/" is the home folder, "{config}" is
	// $XDG_CONFIG_HOME (else ~/.config), "{codex}" $CODEX_HOME (else
	// ~/.codex), "{claude}" $CLAUDE_CONFIG_DIR (else ~/.claude).
	User string
	// UserElse, when set, are further user folders: the first whose
	// parent exists is taken (User's parent is tried first), else the last.
	UserElse []string
}

// AgentsSource names where the agent table comes from: the public `skills`
// CLI's own table of agents and their skills folders (39 agents), read at
// that release; Universal is the cross-client convention beside them.
const AgentsSource = "vercel-labs/skills v1.3.9 (commit 82dd76bda58bedde5ddbf8f86fe63a538db20c19), src/agents.ts: skillsDir and globalSkillsDir of each agent"

// Universal is the generic folder every Agent Skills client may read.
var Universal = Agent{Name: "universal", Display: "Agent Skills (.agents/skills)", Project: ".agents/skills", User: "~/.agents/skills"}

// Agents is the agent table, in the order of its source (AgentsSource).
var Agents = []Agent{
	{Name: "amp", Display: "Amp", Project: ".agents/skills", User: "{config}/agents/skills"},
	{Name: "antigravity", Display: "Antigravity", Project: ".agent/skills", User: "~/.gemini/antigravity/skills"},
	{Name: "augment", Display: "Augment", Project: ".augment/skills", User: "~/.augment/skills"},
	{Name: "claude-code", Display: "Claude Code", Project: ".claude/skills", User: "{claude}/skills"},
	{Name: "openclaw", Display: "OpenClaw", Project: "skills", User: "~/.openclaw/skills", UserElse: []string{"~/.clawdbot/skills", "~/.moltbot/skills"}},
	{Name: "cline", Display: "Cline", Project: ".cline/skills", User: "~/.cline/skills"},
	{Name: "codebuddy", Display: "CodeBuddy", Project: ".codebuddy/skills", User: "~/.codebuddy/skills"},
	{Name: "codex", Display: "Codex", Project: ".agents/skills", User: "{codex}/skills"},
	{Name: "command-code", Display: "Command Code", Project: ".commandcode/skills", User: "~/.commandcode/skills"},
	{Name: "continue", Display: "Continue", Project: ".continue/skills", User: "~/.continue/skills"},
	{Name: "crush", Display: "Crush", Project: ".crush/skills", User: "~/.config/crush/skills"},
	{Name: "cursor", Display: "Cursor", Project: ".cursor/skills", User: "~/.cursor/skills"},
	{Name: "droid", Display: "Droid", Project: ".factory/skills", User: "~/.factory/skills"},
	{Name: "gemini-cli", Display: "Gemini CLI", Project: ".agents/skills", User: "~/.gemini/skills"},
	{Name: "github-copilot", Display: "GitHub Copilot", Project: ".agents/skills", User: "~/.copilot/skills"},
	{Name: "goose", Display: "Goose", Project: ".goose/skills", User: "{config}/goose/skills"},
	{Name: "junie", Display: "Junie", Project: ".junie/skills", User: "~/.junie/skills"},
	{Name: "iflow-cli", Display: "iFlow CLI", Project: ".iflow/skills", User: "~/.iflow/skills"},
	{Name: "kilo", Display: "Kilo Code", Project: ".kilocode/skills", User: "~/.kilocode/skills"},
	{Name: "kimi-cli", Display: "Kimi Code CLI", Project: ".agents/skills", User: "~/.config/agents/skills"},
	{Name: "kiro-cli", Display: "Kiro CLI", Project: ".kiro/skills", User: "~/.kiro/skills"},
	{Name: "kode", Display: "Kode", Project: ".kode/skills", User: "~/.kode/skills"},
	{Name: "mcpjam", Display: "MCPJam", Project: ".mcpjam/skills", User: "~/.mcpjam/skills"},
	{Name: "mistral-vibe", Display: "Mistral Vibe", Project: ".vibe/skills", User: "~/.vibe/skills"},
	{Name: "mux", Display: "Mux", Project: ".mux/skills", User: "~/.mux/skills"},
	{Name: "opencode", Display: "OpenCode", Project: ".agents/skills", User: "{config}/opencode/skills"},
	{Name: "openhands", Display: "OpenHands", Project: ".openhands/skills", User: "~/.openhands/skills"},
	{Name: "pi", Display: "Pi", Project: ".pi/skills", User: "~/.pi/agent/skills"},
	{Name: "qoder", Display: "Qoder", Project: ".qoder/skills", User: "~/.qoder/skills"},
	{Name: "qwen-code", Display: "Qwen Code", Project: ".qwen/skills", User: "~/.qwen/skills"},
	{Name: "replit", Display: "Replit", Project: ".agents/skills", User: "{config}/agents/skills"},
	{Name: "roo", Display: "Roo Code", Project: ".roo/skills", User: "~/.roo/skills"},
	{Name: "trae", Display: "Trae", Project: ".trae/skills", User: "~/.trae/skills"},
	{Name: "trae-cn", Display: "Trae CN", Project: ".trae/skills", User: "~/.trae-cn/skills"},
	{Name: "windsurf", Display: "Windsurf", Project: ".windsurf/skills", User: "~/.codeium/windsurf/skills"},
	{Name: "zencoder", Display: "Zencoder", Project: ".zencoder/skills", User: "~/.zencoder/skills"},
	{Name: "neovate", Display: "Neovate", Project: ".neovate/skills", User: "~/.neovate/skills"},
	{Name: "pochi", Display: "Pochi", Project: ".pochi/skills", User: "~/.pochi/skills"},
	{Name: "adal", Display: "AdaL", Project: ".adal/skills", User: "~/.adal/skills"},
}

// FindAgent returns the agent named name (Universal included).
func FindAgent(name string) (Agent, bool) {
	if name == Universal.Name {
		return Universal, true
	}
	for _, a := range Agents {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// AgentNames lists every name --agent takes, sorted.
func AgentNames() []string {
	names := []string{Universal.Name}
	for _, a := range Agents {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	return names
}

// Scope says which of an agent's folders a run writes.
type Scope string

const (
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
)

// ParseScope reads --scope.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeProject, ScopeUser:
		return Scope(s), nil
	case "global":
		return ScopeUser, nil
	}
	return "", fmt.Errorf("scope %q: expected project (folders of the project) or user (folders of your home, for every project)", s)
}

// UnknownAgentError is an --agent name that is not in the table.
type UnknownAgentError struct{ Name string }

func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("unknown agent %q (agents: %s)", e.Name, strings.Join(AgentNames(), ", "))
}

// Env is what resolving folders reads from the environment.
type Env struct {
	Home   string
	Getenv func(string) string
	// Exists reports whether a path exists (UserElse).
	Exists func(string) bool
}

// OSEnv is the process's environment.
func OSEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("the user scope needs the home folder: %w", err)
	}
	return Env{Home: home, Getenv: os.Getenv, Exists: func(p string) bool { _, err := os.Lstat(p); return err == nil }}, nil
}

// Folder is the agent's folder in scope: under root for the project
// scope, else the user's.
func (a Agent) Folder(scope Scope, root string, env Env) string {
	if scope == ScopeProject {
		return filepath.Join(root, filepath.FromSlash(a.Project))
	}
	if len(a.UserElse) > 0 {
		all := append([]string{a.User}, a.UserElse...)
		for _, u := range all[:len(all)-1] {
			if p := env.expand(u); env.Exists(filepath.Dir(p)) {
				return p
			}
		}
		return env.expand(all[len(all)-1])
	}
	return env.expand(a.User)
}

// expand resolves a User path of the table.
func (env Env) expand(p string) string {
	homeOr := func(envName, def string) string {
		if v := strings.TrimSpace(env.Getenv(envName)); v != "" {
			return v
		}
		return filepath.Join(env.Home, def)
	}
	for prefix, base := range map[string]func() string{
		"~/":        func() string { return env.Home },
		"{config}/": func() string { return homeOr("XDG_CONFIG_HOME", ".config") },
		"{codex}/":  func() string { return homeOr("CODEX_HOME", ".codex") },
		"{claude}/": func() string { return homeOr("CLAUDE_CONFIG_DIR", ".claude") },
	} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return filepath.Join(base(), filepath.FromSlash(rest))
		}
	}
	return p
}
