// Package directory is the black-box conformance group of the
// iii-directory v0.5 surface (directory::*) and of folder skills in the
// registry. It speaks only the iii worker protocol to an engine URL and
// writes skill files into a folder that the implementation under test
// serves:
//
//	go test ./conformance/directory                        builds and starts skills --standalone --skills-folder <tmp>
//	go test ./conformance/directory -args --iii-url ws://host:port --skills-folder /srv/skills
//	skills-conformance --label-filter directory --iii-url ws://host:port --skills-folder /srv/skills
//
// Without --iii-url the suite launches our own server on a folder it
// controls. With --iii-url, --skills-folder (env CONFORMANCE_SKILLS_FOLDER)
// must name the folder that server watches; every spec works in a fresh
// sub-folder of it and removes it afterwards.
package directory

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var flagFolder = flag.String("skills-folder", "", "with --iii-url: the skills folder the server under test watches (env CONFORMANCE_SKILLS_FOLDER)")

// group holds every spec of this package (label "directory").
var group = harness.NewGroup("directory")

var (
	client *harness.Client
	// folder is the skills folder the server under test serves.
	folder string
)

var _ = group.Setup(func(ctx SpecContext) {
	url := harness.EngineURL()
	folder = *flagFolder
	if folder == "" {
		folder = os.Getenv("CONFORMANCE_SKILLS_FOLDER")
	}
	if url != "" {
		if folder == "" {
			group.SkipAll("--iii-url given without --skills-folder: the directory group needs the folder the server watches")
		}
	} else {
		dir, err := os.MkdirTemp("", "directory-conformance-")
		Expect(err).NotTo(HaveOccurred())
		group.AfterAll(func() { _ = os.RemoveAll(dir) })
		folder = filepath.Join(dir, "served-skills")
		Expect(os.MkdirAll(folder, 0o755)).To(Succeed())
		bin, err := harness.ServerBin(ctx, dir)
		Expect(err).NotTo(HaveOccurred())
		srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: bin, Dir: dir, Name: "main", Args: []string{"--skills-folder", folder}})
		Expect(err).NotTo(HaveOccurred())
		group.AfterAll(srv.Stop)
		url = srv.URL
	}
	var err error
	client, err = harness.Dial(ctx, url, "directory-conformance")
	Expect(err).NotTo(HaveOccurred())
	group.AfterAll(func() { _ = client.Close() })
	Eventually(func() error {
		_, err := client.Call(ctx, "directory::skills::list", map[string]any{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
})

var bg = context.Background()
