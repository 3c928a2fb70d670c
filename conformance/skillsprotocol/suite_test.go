package skillsprotocol

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

func TestSkillsProtocol(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "skills protocol conformance")
}

var _ = AfterSuite(harness.TearDown)
