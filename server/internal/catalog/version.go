package catalog

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// ValidateVersion accepts "" (unversioned) or a full semantic version
// MAJOR.MINOR.PATCH with optional -prerelease and +build, without a
// leading "v" ("1.2.0", "2.0.0-rc.1").
func ValidateVersion(v string) error {
	if v == "" {
		return nil
	}
	core := v
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	if strings.Count(core, ".") != 2 || !semver.IsValid("v"+v) {
		return fmt.Errorf("invalid version %q: expected a semantic version MAJOR.MINOR.PATCH such as 1.2.0", v)
	}
	return nil
}

// CompareVersions orders versions by semver precedence; "" (unversioned)
// sorts before every version. Versions equal in precedence but different
// in build metadata are ordered bytewise so the order is total.
func CompareVersions(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return -1
	case b == "":
		return 1
	}
	if c := semver.Compare("v"+a, "v"+b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}
