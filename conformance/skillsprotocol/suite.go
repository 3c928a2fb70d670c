// Package skillsprotocol is the black-box conformance group of the
// Skills Protocol runtime (seed 002): it speaks only JSON-RPC 2.0 over HTTP
// to one URL and covers every tool, every error code, pagination,
// versions, blobs and the sandbox. Its fixtures are the bundles in
// testdata/bundles (embedded in the package), which the server under test
// must serve: skills --sp-bundles conformance/skillsprotocol/testdata/bundles,
// or the folder `skills-conformance --write-bundles DIR` writes, with
// CONF_GRANTED_SECRET granted to the folder bundle conf.secret (GrantConfig).
package skillsprotocol

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var flagRPCURL = flag.String("rpc-url", "",
	"Skills Protocol endpoint under test (env SKILLS_RPC_URL), serving testdata/bundles; empty: launch skills --standalone (--skills-bin, or built from a clone)")

// GrantConfig is the config.yaml a server under test needs: it grants
// conf.secret's CONF_GRANTED_SECRET. grantedSecret is the value the launched
// server gives that secret (from its environment, granted by GrantConfig);
// notGranted is in the server's environment too but no manifest names it.
const (
	GrantConfig   = "skills_protocol:\n  secret_grants:\n    - {bundle: conf.secret, origin: folder, names: [CONF_GRANTED_SECRET]}\n"
	grantedSecret = "granted-value"
	notGranted    = "CONF_NOT_GRANTED_SECRET"
)

// group holds every spec of this package (label "skillsprotocol").
var group = harness.NewGroup("skillsprotocol")

var (
	rpc      *client
	launched bool
	dataDir  string
)

var _ = group.Setup(func(ctx SpecContext) {
	url := *flagRPCURL
	if url == "" {
		url = os.Getenv("SKILLS_RPC_URL")
	}
	if url == "" && harness.EngineURL() != "" {
		group.SkipAll("--iii-url given without --rpc-url: the skillsprotocol group needs the /rpc URL of the server under test")
	}
	if url == "" {
		dir, err := os.MkdirTemp("", "skills-protocol-conformance-")
		Expect(err).NotTo(HaveOccurred())
		group.AfterAll(func() { _ = os.RemoveAll(dir) })
		bin, err := harness.ServerBin(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		port, err := harness.FreePort()
		Expect(err).NotTo(HaveOccurred())
		bundles := filepath.Join(dir, "bundles")
		Expect(WriteBundles(bundles)).To(Succeed())
		// The launched server inherits these: a granted and a not granted secret.
		Expect(os.Setenv("CONF_GRANTED_SECRET", grantedSecret)).To(Succeed())
		Expect(os.Setenv(notGranted, "must-not-leak")).To(Succeed())
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: bin, Dir: dir, Name: "sp", Config: []byte(GrantConfig),
			Args: []string{"--mcp-addr", addr, "--sp-bundles", bundles}})
		Expect(err).NotTo(HaveOccurred())
		group.AfterAll(srv.Stop)
		url = "http://" + addr + "/rpc"
		launched, dataDir = true, filepath.Join(dir, "sp", "data")
	}
	rpc = &client{url: url}
	Eventually(func() error {
		_, err := rpc.raw(context.Background(), []byte(`{"jsonrpc":"2.0","method":"list_skills","id":0}`))
		return err
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	GinkgoWriter.Printf("Skills Protocol endpoint under test: %s (launched: %v)\n", url, launched)
})
