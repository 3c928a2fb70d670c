// Package registry is the black-box conformance group of the skills
// registry (upstream `skills` worker v0.2.2): every engine-backed upstream
// BDD scenario (checklist B–I of docs/reference/skills-worker.md §5) plus the additional
// checks J1–J18 that need an engine. It speaks only the iii worker protocol
// to an engine URL, so it checks any implementation behind an iii engine.
//
// Importing the package declares its specs (label "registry");
// `go test ./conformance/registry` and the skills-conformance binary run
// them.
package registry

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

// group holds every spec of this package.
var group = harness.NewGroup("registry")

var (
	// target is the engine (and registry) under test.
	target harness.Target
	// client is the suite's own iii worker on that engine.
	client *harness.Client
	// scratch holds the built binary and the data of launched instances.
	scratch string
)

var _ = group.Setup(func(ctx SpecContext) {
	dir, err := os.MkdirTemp("", "skills-conformance-")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = os.RemoveAll(dir) })
	t, stop, err := harness.Setup(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(stop)
	if t.Launched {
		GinkgoWriter.Printf("registry under test: our skills --standalone at %s (binary %s)\n", t.URL, t.Bin)
	} else {
		GinkgoWriter.Printf("registry under test: external engine %s\n", t.URL)
	}
	target = t
	scratch, err = os.MkdirTemp("", "skills-conformance-proc-")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = os.RemoveAll(scratch) })
	client, err = harness.Dial(ctx, target.URL, "skills-conformance")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = client.Close() })
})

// Like upstream's harness, every spec starts from empty skills and prompts
// scopes, so the specs must run one at a time (no ginkgo -p).
var _ = group.BeforeEach(func(ctx SpecContext) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	Expect(client.CleanRegistry(cctx)).To(Succeed())
})

// bg is for calls made from cleanup code, where no spec context exists.
var bg = context.Background()
