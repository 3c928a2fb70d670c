package downloads

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/skillarchive"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// fakeRegistry serves a fixed catalog; only the catalog methods are
// implemented (the embedded nil Registry panics on anything else).
type fakeRegistry struct {
	core.Registry
	mu     sync.Mutex
	skills map[string]skillsext.Skill
	files  map[string]map[string][]byte
	// change, when set, returns the bytes of the n-th read (from 1) of a
	// file instead of its own.
	change func(path, file string, n int, b []byte) []byte
	reads  map[string]int
}

func newFake() *fakeRegistry {
	return &fakeRegistry{skills: map[string]skillsext.Skill{}, files: map[string]map[string][]byte{}, reads: map[string]int{}}
}

// add puts a skill with files; its digests are computed here.
func (f *fakeRegistry) add(s skillsext.Skill, files map[string][]byte) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	s.Files = nil
	for _, p := range paths {
		sum := sha256.Sum256(files[p])
		s.Files = append(s.Files, skillsext.File{Path: p, Size: int64(len(files[p])), SHA256: hex.EncodeToString(sum[:])})
	}
	if s.SHA256 == "" {
		sum := sha256.Sum256([]byte(fmt.Sprint(s.Files)))
		s.SHA256 = hex.EncodeToString(sum[:])
	}
	f.skills[s.Path], f.files[s.Path] = s, files
}

func (f *fakeRegistry) CatalogSkills(_ context.Context, after string, limit int) ([]skillsext.Skill, bool, error) {
	var out []skillsext.Skill
	for _, s := range f.skills {
		if s.Path > after {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, false, nil
}

func (f *fakeRegistry) CatalogSkill(_ context.Context, p string) (skillsext.Skill, bool, error) {
	s, ok := f.skills[p]
	return s, ok, nil
}

func (f *fakeRegistry) CatalogFile(_ context.Context, p, file string) ([]byte, error) {
	b, ok := f.files[p][file]
	if !ok {
		return nil, skillsext.ErrNoSuchFile
	}
	f.mu.Lock()
	f.reads[p+"/"+file]++
	n := f.reads[p+"/"+file]
	f.mu.Unlock()
	if f.change != nil {
		return f.change(p, file, n, b), nil
	}
	return b, nil
}

func serve(t *testing.T, h *Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	h.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func md(name, desc string) []byte {
	return []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\n")
}

// A file that changes between the archive's digest and its sending ends
// the download short: the client never gets other bytes under the
// announced length and digest. A SKILL.md that changed is refused.
func TestChangedWhileSent(t *testing.T) {
	f := newFake()
	f.add(skillsext.Skill{Path: "pdf", Name: "pdf", Description: "PDFs."}, map[string][]byte{
		"SKILL.md": md("pdf", "PDFs."), "scripts/run.sh": []byte("#!/bin/sh\necho 1\n")})
	f.change = func(p, file string, n int, b []byte) []byte {
		if file == "scripts/run.sh" && n >= 2 { // the 1st read made the digest
			return []byte("#!/bin/sh\necho 2\n")
		}
		if file == "SKILL.md" && n >= 3 {
			return md("pdf", "Changed.")
		}
		return b
	}
	base := serve(t, New(Options{Registry: f, Logger: quiet}))
	// A small archive is still in the server's buffer when it is cut: no
	// answer at all; a larger one arrives short.
	resp, err := http.Get(base + "/archive/pdf.zip")
	if err == nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			t.Fatalf("a file changed while sent: %d, %d bytes of %s, read whole: want a body cut short", resp.StatusCode, len(b), resp.Header.Get("Content-Length"))
		}
	}
	resp, err = http.Get(base + "/.well-known/agent-skills/pdf/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "SKILL.md of skill pdf changed while it was read") {
		t.Fatalf("a SKILL.md that changed: %d %q", resp.StatusCode, b)
	}
}

// A client that stops reading holds its share of memory only until its
// writes stall past Stall; meanwhile its other downloads wait, then get
// 503 with Retry-After; afterwards it downloads again.
func TestSlowReaderIsCutOff(t *testing.T) {
	big := make([]byte, 8<<20) // incompressible: fills the socket buffers
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	f.add(skillsext.Skill{Path: "big", Name: "big", Description: "Big."}, map[string][]byte{"SKILL.md": md("big", "Big."), "assets/blob.bin": big})
	h := New(Options{Registry: f, Logger: quiet, MemoryMiB: 12, QueueWait: 200 * time.Millisecond, Stall: 300 * time.Millisecond})
	base := serve(t, h)

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /.well-known/agent-skills/big.zip HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(base, "http://"))
	status, err := bufio.NewReader(conn).ReadString('\n') // the status line, then nothing more is read
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("the stalled download: %q %v", status, err)
	}
	testutil.Eventually(t, 10*time.Second, "the stalled download holds its share", func() bool { return h.memory.Held("addr:127.0.0.1") > 0 })

	resp, err := http.Get(base + "/archive/big.zip")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The stalled one may have been cut off already; if not, this waited
	// and was refused.
	if resp.StatusCode == http.StatusServiceUnavailable {
		if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "too many downloads at once") {
			t.Fatalf("503 without Retry-After or reason: %v %q", resp.Header, b)
		}
	} else if resp.StatusCode != 200 {
		t.Fatalf("a second download: %d %q", resp.StatusCode, b)
	}
	testutil.Eventually(t, 30*time.Second, "the stalled download cut off and its memory released", func() bool { return h.memory.Used() == 0 })
	resp, err = http.Get(base + "/archive/big.zip")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || fmt.Sprint(n) != resp.Header.Get("Content-Length") {
		t.Fatalf("after the cut: %d, %d bytes of %s, %v", resp.StatusCode, n, resp.Header.Get("Content-Length"), err)
	}
}

// What the index leaves out, and why.
func TestIndexLeavesOut(t *testing.T) {
	f := newFake()
	f.add(skillsext.Skill{Path: "ok", Name: "ok", Description: "Fine."}, map[string][]byte{"SKILL.md": md("ok", "Fine.")})
	f.add(skillsext.Skill{Path: "acme/dup", Name: "dup", Description: "A."}, map[string][]byte{"SKILL.md": md("dup", "A.")})
	f.add(skillsext.Skill{Path: "globex/dup", Name: "dup", Description: "G."}, map[string][]byte{"SKILL.md": md("dup", "G.")})
	f.add(skillsext.Skill{Path: "live", Name: "live", Description: "L.", Dynamic: true}, map[string][]byte{"SKILL.md": md("live", "L.")})
	f.add(skillsext.Skill{Path: "long", Name: "long", Description: strings.Repeat("é", 1025)}, map[string][]byte{"SKILL.md": md("long", "x")})
	f.add(skillsext.Skill{Path: "bad", Name: "Bad", Description: "B.", Problem: "name \"Bad\" is not a valid Agent Skills name"}, map[string][]byte{"SKILL.md": md("Bad", "B.")})
	f.add(skillsext.Skill{Path: "nomd", Name: "nomd", Description: "N."}, map[string][]byte{"README.md": []byte("# no SKILL.md\n")})
	h := New(Options{Registry: f, Logger: quiet})
	idx, left, err := h.BuildIndex(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Skills) != 1 || idx.Skills[0].Name != "ok" || idx.Skills[0].URL != "./ok@sha256:"+f.skills["ok"].SHA256+"/SKILL.md" {
		t.Fatalf("index: %+v", idx.Skills)
	}
	why := map[string]string{}
	for _, l := range left {
		why[l.Path] = l.Reason
	}
	for p, want := range map[string]string{
		"acme/dup":   "also the name of globex/dup",
		"globex/dup": "also the name of acme/dup",
		"live":       "iii://fn/",
		"long":       "1025 characters, over the 1024",
		"bad":        "not a valid Agent Skills name",
		"nomd":       "no SKILL.md",
	} {
		if !strings.Contains(why[p], want) {
			t.Errorf("%s left out for %q, want %q", p, why[p], want)
		}
	}
}

// Download paths: the suffix names the format, what is before it the
// skill path; anything else is refused with what was expected.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		rest    string
		layout  skillarchive.Layout
		id, sel string
		format  format
		status  int
		name    string
	}{
		{"acme/pdf.zip", skillarchive.Flat, "acme/pdf", "", formatZip, 0, "pdf.zip"},
		{"acme/pdf@3.tar.gz", skillarchive.Wrapped, "acme/pdf", "3", formatTarGz, 0, "pdf-3.tar.gz"},
		{"acme/pdf@v1.zip.zip", skillarchive.Flat, "acme/pdf", "v1.zip", formatZip, 0, "pdf-v1.zip.zip"},
		{"acme/pdf@v1.tar.zip", skillarchive.Flat, "acme/pdf", "v1.tar", formatZip, 0, "pdf-v1.tar.zip"},
		{"pdf@sha256:" + strings.Repeat("ab", 32) + "/SKILL.md", skillarchive.Flat, "pdf", "sha256:" + strings.Repeat("ab", 32), formatSkillMD, 0, "SKILL.md"},
		{"pdf@sha256:" + strings.Repeat("ab", 32) + ".zip", skillarchive.Wrapped, "pdf", "sha256:" + strings.Repeat("ab", 32), formatZip, 0, "pdf-sha256-abababababab.zip"},
		{"pdf@latest.zip", skillarchive.Flat, "pdf", "latest", formatZip, 0, "pdf-latest.zip"},
		{"pdf/SKILL.md", skillarchive.Wrapped, "", "", 0, 404, ""},
		{"pdf.tgz", skillarchive.Flat, "", "", 0, 404, ""},
		{".zip", skillarchive.Flat, "", "", 0, 404, ""},
		{"pdf@0.zip", skillarchive.Flat, "", "", 0, 400, ""},
		{"pdf@1@2.zip", skillarchive.Flat, "", "", 0, 400, ""},
		{"fn/x.zip", skillarchive.Flat, "", "", 0, 400, ""},
		{"a//b.zip", skillarchive.Flat, "", "", 0, 400, ""},
	} {
		req, ref := parse(c.rest, WellKnownPrefix, c.layout)
		switch {
		case c.status != 0:
			if ref == nil || ref.status != c.status {
				t.Errorf("%s: %+v %v, want %d", c.rest, req, ref, c.status)
			}
		case ref != nil:
			t.Errorf("%s: %v", c.rest, ref)
		case req.id != c.id || req.sel != c.sel || req.format != c.format || fileName(req) != c.name:
			t.Errorf("%s: %+v (%s), want %s@%s %d %s", c.rest, req, fileName(req), c.id, c.sel, c.format, c.name)
		}
	}
}
