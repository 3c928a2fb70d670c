// Package publisher_test runs the same publisher specs against each SDK's
// conformance driver (DRIVER.md): --sdk go|node|python (env CONFORMANCE_SDK).
package publisher_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var flagSDK = flag.String("sdk", "", "SDK whose driver to run: go, node or python (env CONFORMANCE_SDK)")

func TestPublisher(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "skills publisher conformance")
}

var (
	target     harness.Target
	client     *harness.Client
	stopTarget = func() {}
	scratch    string
	root       string
	sdk        string
	driverArgv []string
	u          string
)

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	dir, err := os.MkdirTemp("", "skills-publisher-")
	Expect(err).NotTo(HaveOccurred())
	stopTarget = func() { _ = os.RemoveAll(dir) }
	t, stop, err := harness.Setup(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	stopTarget = func() {
		stop()
		_ = os.RemoveAll(dir)
	}
	return t.Encode()
}, func(ctx SpecContext, data []byte) {
	var err error
	target, err = harness.DecodeTarget(data)
	Expect(err).NotTo(HaveOccurred())
	sdk = *flagSDK
	if sdk == "" {
		sdk = os.Getenv("CONFORMANCE_SDK")
	}
	if sdk == "" {
		Skip("no SDK chosen: run with --sdk go|node|python or CONFORMANCE_SDK (make conformance runs each)")
	}
	Expect(harness.SDKs).To(ContainElement(sdk), "choose the SDK with --sdk or CONFORMANCE_SDK")
	root, err = harness.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	scratch, err = os.MkdirTemp("", "skills-publisher-proc-")
	Expect(err).NotTo(HaveOccurred())
	driverArgv, err = harness.DriverCommand(ctx, sdk, root, scratch)
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
}, func() { stopTarget() })

var _ = BeforeEach(func(ctx SpecContext) {
	u = harness.UID()
	Expect(client.CleanRegistry(ctx)).To(Succeed())
}, NodeTimeout(time.Minute))

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

// started sends start {wait:true} and expects {registered:true}.
func started(ctx context.Context, d *harness.Driver) {
	GinkgoHelper()
	Expect(string(do(ctx, d, "start", map[string]any{"wait": true}))).To(MatchJSON(`{"registered":true}`))
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
