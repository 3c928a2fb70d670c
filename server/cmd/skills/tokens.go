package main

import (
	"errors"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/server/engine"
)

// tokensConfig is the engine_tokens section of config.yaml: per-publisher
// tokens of the embedded engine, each limited to its namespaces.
//
//	engine_tokens:
//	  - name: acme                 # shown in refusals and logs
//	    token_env: ACME_III_TOKEN  # or token: "…" (at least 16 characters)
//	    namespaces: [acme]         # acme::* functions, acme/… skills, acme-… prompts
type tokensConfig struct {
	EngineTokens []struct {
		Name       string   `yaml:"name"`
		Token      string   `yaml:"token"`
		TokenEnv   string   `yaml:"token_env"`
		Namespaces []string `yaml:"namespaces"`
	} `yaml:"engine_tokens"`
}

// loadScopedTokens reads engine_tokens from the config file. A missing or
// malformed file means none, as for every other key (a bad config never
// blocks boot; the worker has logged it); a token that fails
// engine.ValidateScopedTokens is an error: starting with a bad one could
// let the wrong team in.
func loadScopedTokens(path, shared string) ([]engine.ScopedToken, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var c tokensConfig
	var any map[string]any
	if yaml.Unmarshal(raw, &any) != nil {
		return nil, nil // malformed: LoadConfig has logged it
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("engine_tokens in %s: expected a list of {name, token or token_env, namespaces}: %w", path, err)
	}
	out := make([]engine.ScopedToken, 0, len(c.EngineTokens))
	for i, t := range c.EngineTokens {
		token := t.Token
		switch {
		case t.Token != "" && t.TokenEnv != "":
			return nil, fmt.Errorf("engine_tokens[%d] (%s) in %s: set token or token_env, not both", i, t.Name, path)
		case t.TokenEnv != "":
			token = os.Getenv(t.TokenEnv)
			if token == "" {
				return nil, fmt.Errorf("engine_tokens[%d] (%s) in %s: environment variable %s is empty or unset", i, t.Name, path, t.TokenEnv)
			}
		}
		out = append(out, engine.ScopedToken{Name: t.Name, Token: token, Namespaces: t.Namespaces})
	}
	if err := engine.ValidateScopedTokens(out, shared); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
