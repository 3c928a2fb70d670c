// Package directory_test is the black-box conformance group of the
// iii-directory v0.5 surface (directory::*) and of folder skills in the
// registry. It speaks only the iii worker protocol to an engine URL and
// writes skill files into a folder that the implementation under test
// serves:
//
//	go test ./conformance/directory                        builds and starts skills --standalone --skills-folder <tmp>
//	go test ./conformance/directory -args --iii-url ws://host:port --skills-folder /srv/skills
//
// Without --iii-url the suite launches our own server on a folder it
// controls. With --iii-url, --skills-folder (env CONFORMANCE_SKILLS_FOLDER)
// must name the folder that server watches; every spec works in a fresh
// sub-folder of it and removes it afterwards.
package directory_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var flagFolder = flag.String("skills-folder", "", "with --iii-url: the skills folder the server under test watches (env CONFORMANCE_SKILLS_FOLDER)")

func TestDirectory(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iii-directory conformance")
}

var (
	client *harness.Client
	// folder is the skills folder the server under test serves.
	folder string
	stop   = func() {}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	url := os.Getenv("III_URL")
	if f := flag.Lookup("iii-url"); f != nil && f.Value.String() != "" {
		url = f.Value.String()
	}
	folder = *flagFolder
	if folder == "" {
		folder = os.Getenv("CONFORMANCE_SKILLS_FOLDER")
	}
	if url != "" {
		if folder == "" {
			Skip("--iii-url given without --skills-folder: the directory group needs the folder the server watches")
		}
	} else {
		dir, err := os.MkdirTemp("", "directory-conformance-")
		Expect(err).NotTo(HaveOccurred())
		folder = filepath.Join(dir, "served-skills")
		Expect(os.MkdirAll(folder, 0o755)).To(Succeed())
		bin := os.Getenv("SKILLS_BIN")
		if bin == "" {
			bin, err = harness.BuildServer(ctx, dir)
			Expect(err).NotTo(HaveOccurred())
		}
		srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: bin, Dir: dir, Name: "main", Args: []string{"--skills-folder", folder}})
		Expect(err).NotTo(HaveOccurred())
		url = srv.URL
		stop = func() {
			srv.Stop()
			_ = os.RemoveAll(dir)
		}
	}
	var err error
	client, err = harness.Dial(ctx, url, "directory-conformance")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		_, err := client.Call(ctx, "directory::skills::list", map[string]any{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}, NodeTimeout(15*time.Minute))

var _ = AfterSuite(func() {
	if client != nil {
		_ = client.Close()
	}
	stop()
})

var bg = context.Background()
