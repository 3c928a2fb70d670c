package worker

import (
	"strings"
	"testing"
)

// The iii-directory keys of config.yaml never reach the v0.2.2 manifest.
func TestManifestKeepsUpstreamKeys(t *testing.T) {
	if strings.Contains(string(ManifestJSON()), "skills_folder") {
		t.Error("the v0.2.2 manifest changed")
	}
}
