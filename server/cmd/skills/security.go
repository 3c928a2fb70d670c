package main

import (
	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/app"
)

// Environment variables that supply a flag's value when it is not given.
const (
	engineTokenEnv = app.EnvEngineToken
	mcpTokenEnv    = app.EnvMCPToken
)

// withEngineToken presents the worker token at connect (no-op when empty).
func withEngineToken(token string) iii.Option { return app.WithEngineToken(token) }
