package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

func writeSkill(t *testing.T, root, name, description, body string, files map[string]string) {
	t.Helper()
	files["SKILL.md"] = "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body
	for p, content := range files {
		full := filepath.Join(root, name, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSearchCommandAndSupportingFiles runs `skills --standalone
// --skills-folder DIR` as a process: `skills search` ranks its skills and
// sees a skill added on disk, and skill::fetch and
// directory::skills::fetch-skill read a skill's supporting files.
func TestSearchCommandAndSupportingFiles(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "image-optimization", "Compress and resize PNG and JPEG images so web pages load quickly.",
		"# Image optimization\n\nSee [the guide](reference/guide.md).\n", map[string]string{
			"reference/guide.md": "# Guide\n\nUse WebP.\n",
			"assets/logo.png":    "\x89PNG\r\n\x1a\n\x00\x00binary",
		})
	writeSkill(t, dir, "pdf-processing", "Extract text and tables from PDF files and fill forms.", "# PDF processing\n", map[string]string{})
	engineAddr := testutil.FreeAddr(t)
	url := "ws://" + engineAddr
	_, logs := startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "", "--skills-folder", dir)
	waitListening(t, engineAddr, logs)

	search := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		rc := runSearch(append([]string{"--url", url}, args...), &out, &errb)
		return rc, out.String(), errb.String()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rc, out, errb := search("shrink", "images", "for", "the", "web")
		if rc == 0 && strings.HasPrefix(out, " 1. image-optimization  (folder, score ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("skills search: rc %d, stdout %q, stderr %q", rc, out, errb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rc, out, _ := search("--json", "pdf", "--limit", "1", "forms"); rc != 0 || !strings.Contains(out, `"id": "pdf-processing"`) || !strings.Contains(out, `"low_confidence": false`) {
		t.Fatalf("--json: rc %d %s", rc, out)
	}
	if rc, out, _ := search("zygote xylophone"); rc != 0 || out != "No skill matches this query.\n" {
		t.Fatalf("no match: rc %d %q", rc, out)
	}
	if rc, _, errb := search("--limit", "0", "pdf"); rc != 2 || !strings.Contains(errb, "limit must be an integer from 1 to 100, got 0") {
		t.Fatalf("bad limit: rc %d %q", rc, errb)
	}
	if rc, _, errb := search(); rc != 2 || !strings.Contains(errb, "say what you are looking for") {
		t.Fatalf("no query: rc %d %q", rc, errb)
	}

	// Hot reload: a skill written to the folder is found.
	writeSkill(t, dir, "quokka-census", "Count quokkas on Rottnest island.", "# Quokka census\n", map[string]string{})
	deadline = time.Now().Add(20 * time.Second)
	for {
		rc, out, _ := search("quokka")
		if rc == 0 && strings.Contains(out, "quokka-census") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new skill not found: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Supporting files over iii, through both fetch functions.
	trigger := func(fn, payload string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := runTrigger([]string{"--url", url, "--function-id", fn, "--payload", payload}, nil, &out, &errb); rc != 0 {
			t.Fatalf("%s %s: rc %d, %s", fn, payload, rc, errb.String())
		}
		return out.String()
	}
	for _, fn := range []string{"skill::fetch", "directory::skills::fetch-skill"} {
		got := trigger(fn, `{"uri":"iii://image-optimization/reference/guide.md"}`)
		if got != "# iii://image-optimization/reference/guide.md\n\n# Guide\n\nUse WebP.\n" {
			t.Fatalf("%s text file: %q", fn, got)
		}
		got = trigger(fn, `{"uri":"image-optimization/assets/logo.png"}`)
		if !strings.Contains(got, "image/png") || !strings.Contains(got, "skill://image-optimization/assets/logo.png") || strings.Contains(got, "PNG\r") {
			t.Fatalf("%s binary file: %q", fn, got)
		}
	}
	got := trigger("skills::resources-read", `{"uri":"iii://image-optimization/reference/guide.md"}`)
	if !strings.Contains(got, `"text": "# Guide\n\nUse WebP.\n"`) || !strings.Contains(got, `"mimeType": "text/markdown"`) {
		t.Fatalf("resources-read: %s", got)
	}
	var errb bytes.Buffer
	if rc := runTrigger([]string{"--url", url, "--function-id", "skill::fetch", "--payload", `{"uri":"iii://image-optimization/nope.md"}`}, nil, io.Discard, &errb); rc != 1 || !strings.Contains(errb.String(), "segment") {
		t.Fatalf("missing file: rc %d %q", rc, errb.String())
	}
}
