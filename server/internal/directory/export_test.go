package directory

// The fixtures of the package's tests, for its external tests (app_test.go).
var (
	AgentFolder = agentFolder
	Put         = put
)
