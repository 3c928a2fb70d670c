// Package skillsprotocol_test is the black-box conformance group of the
// Skills Protocol runtime (seed 002): it speaks only JSON-RPC 2.0 over HTTP
// to one URL and covers every tool, every error code, pagination,
// versions, blobs and the sandbox. Its fixtures are the bundles in
// testdata/bundles, which the server under test must serve
// (skills --sp-bundles conformance/skillsprotocol/testdata/bundles), with
// CONF_GRANTED_SECRET granted to conf.secret (see grantConfig).
package skillsprotocol_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var flagRPCURL = flag.String("rpc-url", "",
	"Skills Protocol endpoint under test (env SKILLS_RPC_URL), serving testdata/bundles; empty: build and start `skills --standalone`")

// grantedSecret is the value the launched server gives conf.secret's
// CONF_GRANTED_SECRET (from its environment, granted to that folder bundle
// by grantConfig); notGranted is in the server's environment too but no
// manifest names it.
const (
	grantConfig   = "skills_protocol:\n  secret_grants:\n    - {bundle: conf.secret, origin: folder, names: [CONF_GRANTED_SECRET]}\n"
	grantedSecret = "granted-value"
	notGranted    = "CONF_NOT_GRANTED_SECRET"
)

func TestSkillsProtocol(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "skills protocol conformance")
}

var (
	rpc      *client
	launched bool
	dataDir  string
	stop     = func() {}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	url := *flagRPCURL
	if url == "" {
		url = os.Getenv("SKILLS_RPC_URL")
	}
	if url == "" {
		dir, err := os.MkdirTemp("", "skills-protocol-conformance-")
		Expect(err).NotTo(HaveOccurred())
		stop = func() { _ = os.RemoveAll(dir) }
		bin := os.Getenv("SKILLS_BIN")
		if bin == "" {
			bin, err = harness.BuildServer(ctx, dir)
			Expect(err).NotTo(HaveOccurred())
		}
		port, err := harness.FreePort()
		Expect(err).NotTo(HaveOccurred())
		bundles, err := filepath.Abs("testdata/bundles")
		Expect(err).NotTo(HaveOccurred())
		// The launched server inherits these: a granted and a not granted secret.
		Expect(os.Setenv("CONF_GRANTED_SECRET", grantedSecret)).To(Succeed())
		Expect(os.Setenv(notGranted, "must-not-leak")).To(Succeed())
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: bin, Dir: dir, Name: "sp", Config: []byte(grantConfig),
			Args: []string{"--mcp-addr", addr, "--sp-bundles", bundles}})
		Expect(err).NotTo(HaveOccurred())
		stop = func() { srv.Stop(); _ = os.RemoveAll(dir) }
		url = "http://" + addr + "/rpc"
		launched, dataDir = true, filepath.Join(dir, "sp", "data")
	}
	rpc = &client{url: url}
	Eventually(func() error {
		_, err := rpc.raw(context.Background(), []byte(`{"jsonrpc":"2.0","method":"list_skills","id":0}`))
		return err
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	GinkgoWriter.Printf("Skills Protocol endpoint under test: %s (launched: %v)\n", url, launched)
}, NodeTimeout(15*time.Minute))

var _ = AfterSuite(func() { stop() })
