// Package harness is the plumbing shared by the conformance suites: which
// engine to talk to (an external one, or a `skills --standalone` the suite
// builds and starts itself), an iii client for the suite, per-spec ids,
// registry clean-up, test functions and on-change subscriptions.
//
// Everything goes through the iii worker protocol, so the suites check any
// implementation of the registry that sits behind an iii engine.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Command-line flags of every conformance test binary (go test ... -args, or
// directly after the package list: go test ./conformance/... --iii-url ws://...).
var (
	flagURL = flag.String("iii-url", "",
		"engine URL of the registry under test (env III_URL); empty: launch skills --standalone (--skills-bin, or built from a clone)")
	flagStrictFetch = flag.Bool("strict-fetch", false,
		"expect upstream v0.2.2 fetch: bare skill paths are rejected (env CONFORMANCE_STRICT_FETCH=1)")
	flagBin = flag.String("skills-bin", "",
		"prebuilt skills binary to launch when no engine URL is given (env SKILLS_BIN); empty: go build it from the repository clone")
)

// Target is what the suite runs against. It is JSON so that
// SynchronizedBeforeSuite can hand it from process 1 to the others.
type Target struct {
	// URL is the engine's worker WebSocket URL.
	URL string `json:"url"`
	// Launched reports that the suite started the registry binary itself
	// (no external URL); only then can specs start more instances.
	Launched bool `json:"launched"`
	// Bin is the registry binary when Launched.
	Bin string `json:"bin,omitempty"`
	// StrictFetch: skill::fetch rejects bare paths like upstream v0.2.2.
	StrictFetch bool `json:"strict_fetch"`
}

// Encode serializes t for SynchronizedBeforeSuite.
func (t Target) Encode() []byte {
	b, _ := json.Marshal(t)
	return b
}

// DecodeTarget is the inverse of Encode.
func DecodeTarget(b []byte) (Target, error) {
	var t Target
	err := json.Unmarshal(b, &t)
	return t, err
}

// Setup decides the target from the flags and the environment. With no
// engine URL it builds (or takes SKILLS_BIN) and starts the registry in
// standalone mode; stop must then be called at the end of the suite.
func Setup(ctx context.Context, workDir string) (t Target, stop func(), err error) {
	t.StrictFetch = *flagStrictFetch || envTrue("CONFORMANCE_STRICT_FETCH")
	t.URL = EngineURL()
	if t.URL != "" {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		c, err := Dial(ctx, t.URL, "skills-conformance-probe")
		if err != nil {
			return t, nil, fmt.Errorf("engine %s: %w", t.URL, err)
		}
		defer c.Close()
		if err := c.WaitForRegistry(ctx); err != nil {
			return t, nil, fmt.Errorf("registry behind %s: %w", t.URL, err)
		}
		return t, func() {}, nil
	}
	bin, err := ServerBin(ctx, workDir)
	if err != nil {
		return t, nil, err
	}
	var extra []string
	if t.StrictFetch {
		extra = append(extra, "--strict-fetch")
	}
	srv, err := StartServer(ctx, ServerOptions{Bin: bin, Dir: workDir, Name: "main", Args: extra})
	if err != nil {
		return t, nil, err
	}
	t.URL, t.Launched, t.Bin = srv.URL, true, bin
	return t, srv.Stop, nil
}

// EngineURL is the engine under test from --iii-url or III_URL; empty
// means the suite launches our own server.
func EngineURL() string {
	if *flagURL != "" {
		return *flagURL
	}
	return os.Getenv("III_URL")
}

// ServerBin is the skills binary to launch: --skills-bin, else SKILLS_BIN,
// else one built from the repository into dir (needs a clone and Go).
func ServerBin(ctx context.Context, dir string) (string, error) {
	bin := *flagBin
	if bin == "" {
		bin = os.Getenv("SKILLS_BIN")
	}
	if bin != "" {
		// Instances run in their own directories.
		return filepath.Abs(bin)
	}
	return BuildServer(ctx, dir)
}

func envTrue(key string) bool {
	switch strings.ToLower(os.Getenv(key)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// RepoRoot is the directory holding go.work, found upwards from the working
// directory (go test runs in the package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}

// BuildServer runs `go build -o <dir>/skills github.com/iii-skills/skills/server/cmd/skills`
// from the repository root, in workspace mode.
func BuildServer(ctx context.Context, dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "skills")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/iii-skills/skills/server/cmd/skills")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the skills server failed: %w\n%s", err, out)
	}
	return bin, nil
}
