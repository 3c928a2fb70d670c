package history

// HeadsScope and VersionsScope are the state scopes a History of scope
// keeps beside it: one head (labels, retention) per id, and the immutable
// versions. Only the registry writes them; the embedded engine refuses
// state::* writes to them from every other connection
// (engine.Config.PrivateScopes).
func HeadsScope(scope string) string { return scope + ".history" }

// VersionsScope: see HeadsScope.
func VersionsScope(scope string) string { return scope + ".versions" }
