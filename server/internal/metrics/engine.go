package metrics

import "github.com/iii-skills/skills/server/internal/engine"

// The connection kinds of the embedded engine, as skills_connections labels
// them.
const (
	KindEngineInProcess    = "engine_in_process"
	KindEngineWorker       = "engine_worker"
	KindEngineScopedWorker = "engine_scoped_worker"
	KindEngineTelemetry    = "engine_telemetry"
)

// EngineKinds lists the kinds EngineConnections reports.
var EngineKinds = []string{KindEngineInProcess, KindEngineWorker, KindEngineScopedWorker, KindEngineTelemetry}

// EngineConnections labels the engine's connection counts, for
// Connections(EngineKinds, func() map[string]int { return
// EngineConnections(e.ConnectionCounts()) }).
func EngineConnections(c engine.ConnectionCounts) map[string]int {
	return map[string]int{
		KindEngineInProcess:    c.InProcess,
		KindEngineWorker:       c.Workers,
		KindEngineScopedWorker: c.ScopedWorkers,
		KindEngineTelemetry:    c.Telemetry,
	}
}
