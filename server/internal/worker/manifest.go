package worker

import (
	"encoding/json"
	"runtime"

	"github.com/iii-skills/skills/server/internal/core"
)

// Identity of the worker, as upstream v0.2.2 publishes it.
const (
	Name        = "skills"
	Version     = "0.2.2"
	Description = "Agentic content registry worker. Hosts skills + prompts + the iii:// resource resolver that the mcp worker serves to harnesses."
	// About is the one-line help text of the binary.
	About = "Agentic content registry worker. Hosts skills + prompts + the iii:// resource resolver."
)

// Manifest is the module manifest printed by `skills --manifest`.
type Manifest struct {
	Name             string      `json:"name"`
	Version          string      `json:"version"`
	Description      string      `json:"description"`
	DefaultConfig    core.Config `json:"default_config"`
	SupportedTargets []string    `json:"supported_targets"`
}

// BuildManifest describes this build. The target is spelled as a Rust target
// triple because iii tooling reads manifests written by Rust workers.
func BuildManifest() Manifest {
	return Manifest{
		Name:             Name,
		Version:          Version,
		Description:      Description,
		DefaultConfig:    core.DefaultConfig(),
		SupportedTargets: []string{TargetTriple(runtime.GOOS, runtime.GOARCH)},
	}
}

// ManifestJSON is the pretty-printed manifest.
func ManifestJSON() []byte {
	out, _ := json.MarshalIndent(BuildManifest(), "", "  ")
	return out
}

// TargetTriple maps a Go platform to the Rust target triple iii uses for it.
func TargetTriple(goos, goarch string) string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "arm": "armv7"}[goarch]
	if arch == "" {
		arch = goarch
	}
	switch goos {
	case "linux":
		if goarch == "arm" {
			return "armv7-unknown-linux-gnueabihf"
		}
		return arch + "-unknown-linux-gnu"
	case "darwin":
		return arch + "-apple-darwin"
	case "windows":
		return arch + "-pc-windows-msvc"
	default:
		return arch + "-unknown-" + goos
	}
}
