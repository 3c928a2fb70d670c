package skillsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultProjectFile is the project file read from the current folder.
const DefaultProjectFile = "skills.yaml"

// Project is the project file (skills.yaml): what `skills sync` syncs
// when the command line does not say. Paths are relative to the file's
// folder, which is also the project's root for --scope project.
type Project struct {
	URL        string   `yaml:"url"`
	Dir        string   `yaml:"dir"`
	Agents     []string `yaml:"agents"`
	Scope      string   `yaml:"scope"`
	Lock       string   `yaml:"lock"`
	YankPolicy string   `yaml:"yank_policy"`
	Selectors  []string `yaml:"selectors"`
	Queries    []string `yaml:"queries"`
	QueryLimit int      `yaml:"query_limit"`

	// Root is the folder the file is in (absolute).
	Root string `yaml:"-"`
}

// projectKeys lists the keys of a project file, for messages.
const projectKeys = "url, dir, agents, scope, lock, yank_policy, selectors, queries, query_limit"

// ReadProject reads the project file at path. A missing file is (nil,
// nil) when optional (the default name), else an error.
func ReadProject(path string, optional bool) (*Project, error) {
	b, err := os.ReadFile(path)
	if optional && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the project file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p Project
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		msg := err.Error()
		if strings.Contains(msg, "not found in type") {
			msg += " (keys of a project file: " + projectKeys + ")"
		}
		return nil, fmt.Errorf("project file %s: %s", path, strings.TrimPrefix(msg, "yaml: "))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	p.Root = filepath.Dir(abs)
	if p.Dir != "" && len(p.Agents) > 0 {
		return nil, fmt.Errorf("project file %s: give dir or agents, not both", path)
	}
	return &p, nil
}

// Resolve makes a path of the file absolute (relative to its folder).
func (p *Project) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.Root, path)
}
