// Package registry_test is the black-box conformance suite of the skills
// registry (upstream `skills` worker v0.2.2): every engine-backed upstream
// BDD scenario (checklist B–I of skills-worker.md §5) plus the additional
// checks J1–J18 that need an engine. It speaks only the iii worker protocol
// to an engine URL, so it checks any implementation behind an iii engine.
package registry_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

func TestRegistry(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "skills registry conformance")
}

var (
	// target is the engine (and registry) under test.
	target harness.Target
	// client is the suite's own iii worker on that engine.
	client *harness.Client
	// stopTarget stops the registry the suite launched (process 1 only).
	stopTarget = func() {}
	// scratch holds the built binary and the data of launched instances.
	scratch string
)

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	dir, err := os.MkdirTemp("", "skills-conformance-")
	Expect(err).NotTo(HaveOccurred())
	stopTarget = func() { _ = os.RemoveAll(dir) }
	t, stop, err := harness.Setup(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	stopTarget = func() {
		stop()
		_ = os.RemoveAll(dir)
	}
	if t.Launched {
		GinkgoWriter.Printf("registry under test: our skills --standalone at %s (built into %s)\n", t.URL, t.Bin)
	} else {
		GinkgoWriter.Printf("registry under test: external engine %s\n", t.URL)
	}
	return t.Encode()
}, func(ctx SpecContext, data []byte) {
	var err error
	target, err = harness.DecodeTarget(data)
	Expect(err).NotTo(HaveOccurred())
	scratch, err = os.MkdirTemp("", "skills-conformance-proc-")
	Expect(err).NotTo(HaveOccurred())
	client, err = harness.Dial(ctx, target.URL, "skills-conformance")
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(15*time.Minute))

var _ = SynchronizedAfterSuite(func() {
	if client != nil {
		_ = client.Close()
	}
	if scratch != "" {
		_ = os.RemoveAll(scratch)
	}
}, func() {
	stopTarget()
})

// Like upstream's harness, every spec starts from empty skills and prompts
// scopes, so the specs must run one at a time (no ginkgo -p).
var _ = BeforeEach(func(ctx SpecContext) {
	Expect(client.CleanRegistry(ctx)).To(Succeed())
}, NodeTimeout(time.Minute))

// bg is for calls made from cleanup code, where no spec context exists.
var bg = context.Background()
