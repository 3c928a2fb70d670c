// Package publisher runs the same publisher specs against each SDK's
// conformance driver (DRIVER.md): --sdk go|node|python (env CONFORMANCE_SDK).
package publisher

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var (
	flagSDK = flag.String("sdk", "",
		"publisher group: the SDK of the driver, go, node or python (env CONFORMANCE_SDK); without --driver the suite builds or finds that driver in the repository clone")
	flagDriver = flag.String("driver", "",
		"publisher group: the driver command line, split on spaces and run in the working directory with III_URL set (env CONFORMANCE_DRIVER), e.g. 'node sdk-node/dist/driver.js'")
)

// group holds every spec of this package (label "publisher").
var group = harness.NewGroup("publisher")

var (
	target     harness.Target
	client     *harness.Client
	scratch    string
	root       string
	sdk        string
	driverArgv []string
	u          string
)

var _ = group.Setup(func(ctx SpecContext) {
	sdk = *flagSDK
	if sdk == "" {
		sdk = os.Getenv("CONFORMANCE_SDK")
	}
	command := *flagDriver
	if command == "" {
		command = os.Getenv("CONFORMANCE_DRIVER")
	}
	if sdk == "" && command == "" {
		group.SkipAll("no driver chosen: run with --driver 'CMD ARGS' (any SDK) or --sdk go|node|python from a clone (make conformance runs each)")
	}
	dir, err := os.MkdirTemp("", "skills-publisher-")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = os.RemoveAll(dir) })
	t, stop, err := harness.Setup(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(stop)
	target = t
	scratch, err = os.MkdirTemp("", "skills-publisher-proc-")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = os.RemoveAll(scratch) })
	if command != "" {
		// A driver of any SDK, run in the working directory.
		driverArgv = strings.Fields(command)
		Expect(driverArgv).NotTo(BeEmpty(), "--driver: the command line is blank")
		root, err = os.Getwd()
		Expect(err).NotTo(HaveOccurred())
	} else {
		Expect(harness.SDKs).To(ContainElement(sdk), "choose the SDK with --sdk or CONFORMANCE_SDK")
		root, err = harness.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		driverArgv, err = harness.DriverCommand(ctx, sdk, root, scratch)
		Expect(err).NotTo(HaveOccurred())
	}
	client, err = harness.Dial(ctx, target.URL, "skills-conformance")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = client.Close() })
})

var _ = group.BeforeEach(func(ctx SpecContext) {
	u = harness.UID()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	Expect(client.CleanRegistry(cctx)).To(Succeed())
})

func scoped(base string) string { return harness.Scoped(base, u) }

// driver starts the SDK's driver against url for the current spec.
func driver(url string) *harness.Driver {
	GinkgoHelper()
	d, err := harness.StartDriver(driverArgv, root, url)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if err := d.Close(); err != nil {
			GinkgoWriter.Printf("closing the %s driver: %v\n", sdk, err)
		}
		GinkgoWriter.Printf("--- %s driver stderr ---\n%s\n", sdk, d.Stderr())
	})
	return d
}

func do(ctx context.Context, d *harness.Driver, cmd string, args map[string]any) json.RawMessage {
	GinkgoHelper()
	res, err := d.Do(ctx, cmd, args)
	Expect(err).NotTo(HaveOccurred(), "driver %s %v", cmd, args)
	return res
}

func refused(ctx context.Context, d *harness.Driver, cmd string, args map[string]any, want string) {
	GinkgoHelper()
	_, err := d.Do(ctx, cmd, args)
	var de *harness.DriverError
	Expect(err).To(BeAssignableToTypeOf(de), "driver %s %v should reply ok:false", cmd, args)
	Expect(err.Error()).To(ContainSubstring(want))
}

// started sends start {wait:true} and expects {registered:true} with no
// refusal.
func started(ctx context.Context, d *harness.Driver) {
	GinkgoHelper()
	Expect(string(do(ctx, d, "start", map[string]any{"wait": true}))).To(MatchJSON(`{"registered":true,"rejected":[]}`))
}

func call(ctx context.Context, fn string, payload any) json.RawMessage {
	GinkgoHelper()
	raw, err := client.Call(ctx, fn, payload)
	Expect(err).NotTo(HaveOccurred(), "%s", fn)
	return raw
}

func readText(ctx context.Context, c *harness.Client, uri string) string {
	GinkgoHelper()
	var env struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	Expect(c.CallInto(ctx, "skills::resources-read", map[string]string{"uri": uri}, &env)).To(Succeed())
	Expect(env.Contents).To(HaveLen(1))
	return env.Contents[0].Text
}

func requireLaunched() {
	if !target.Launched {
		Skip("needs the suite to launch the skills binary itself (run without --iii-url / III_URL)")
	}
}
