package harness

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
)

// Group is one conformance group (registry, directory, skillsprotocol,
// publisher). Its specs carry its name as a label and its set-up runs
// before its first spec instead of in a BeforeSuite, so that one process
// can hold several groups: `go test ./conformance/<group>` runs one, the
// shipped skills-conformance binary runs any of them from a single Ginkgo
// suite (Ginkgo allows one BeforeSuite per suite).
//
// Specs run one at a time (no ginkgo -p), so the lazy set-up needs no lock.
type Group struct {
	Name string

	setup    []func(ginkgo.SpecContext)
	each     []func(ginkgo.SpecContext)
	teardown []func()

	started bool   // set-up began (in the first spec of the group)
	ready   bool   // set-up finished without a failure
	skipped string // set-up decided the group cannot run here: why
}

// groups are every Group of the process, in creation order; TearDown
// stops what they started.
var groups []*Group

// SetupTimeout bounds a group's set-up (it may build and start the server).
const SetupTimeout = 15 * time.Minute

// NewGroup declares a group named name (also its label).
func NewGroup(name string) *Group {
	g := &Group{Name: name}
	groups = append(groups, g)
	return g
}

// Setup adds fn to the group's set-up, run once before its first spec.
// A failed assertion fails that spec and every later spec of the group.
// It returns true so it can be called from a package-level var.
func (g *Group) Setup(fn func(ginkgo.SpecContext)) bool {
	g.setup = append(g.setup, fn)
	return true
}

// BeforeEach adds fn to what runs before each spec of the group (after the
// set-up), in the order added.
func (g *Group) BeforeEach(fn func(ginkgo.SpecContext)) bool {
	g.each = append(g.each, fn)
	return true
}

// AfterAll adds fn to what TearDown runs at the end of the suite.
func (g *Group) AfterAll(fn func()) { g.teardown = append(g.teardown, fn) }

// SkipAll, called from the set-up, skips every spec of the group with
// reason (the group needs something this run does not have).
func (g *Group) SkipAll(reason string) {
	g.skipped = reason
	ginkgo.Skip(reason)
}

// Describe is ginkgo.Describe for a top-level container of the group: it
// adds the group label and runs the group's set-up and per-spec hooks
// before the container's own BeforeEach nodes.
func (g *Group) Describe(text string, args ...any) bool {
	for i, a := range args {
		if body, ok := a.(func()); ok {
			args[i] = func() {
				ginkgo.BeforeEach(g.before, ginkgo.NodeTimeout(SetupTimeout))
				body()
			}
		}
	}
	return ginkgo.Describe(text, append([]any{ginkgo.Label(g.Name)}, args...)...)
}

func (g *Group) before(ctx ginkgo.SpecContext) {
	switch {
	case g.skipped != "":
		ginkgo.Skip(g.skipped)
	case g.started && !g.ready:
		ginkgo.Fail(fmt.Sprintf("the %s group's set-up failed in an earlier spec (see its failure)", g.Name))
	case !g.started:
		g.started = true
		for _, fn := range g.setup {
			fn(ctx)
		}
		g.ready = true
	}
	for _, fn := range g.each {
		fn(ctx)
	}
}

// TearDown runs every group's AfterAll functions (latest first within a
// group). Suites call it from their one AfterSuite.
func TearDown() {
	for _, g := range groups {
		for i := len(g.teardown) - 1; i >= 0; i-- {
			g.teardown[i]()
		}
		g.teardown = nil
	}
}
