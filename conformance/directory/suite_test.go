package directory

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

func TestDirectory(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iii-directory conformance")
}

var _ = AfterSuite(harness.TearDown)
