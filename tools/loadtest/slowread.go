package main

// slowread: concurrent slow readers of one big folder file over /rpc
// (the memory of slow readers), measured from
// outside the process. Each reader POSTs read_skill_file for a 15 MiB
// binary file of a skills folder and reads the answer 64 KiB every
// 10 ms; a reader refused for lack of room (503, Retry-After) waits as
// told and asks again, as a well-behaved client does. It reports the
// server's peak RSS (VmHWM, reset through /proc/PID/clear_refs) above its
// idle RSS for each count of readers.

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func slowread(args []string) error {
	fs := flag.NewFlagSet("loadtest slowread", flag.ContinueOnError)
	bin := fs.String("skills", "bin/skills", "the skills binary")
	fileMiB := fs.Int("file-mib", 15, "size of the folder file the readers read (MiB; a folder skill holds at most 16)")
	counts := fs.String("readers", "32,64", "comma-separated counts of concurrent slow readers, one fresh server each")
	every := fs.Duration("every", 10*time.Millisecond, "a reader reads 64 KiB this often")
	maxAbove := fs.Int("max-above-idle-mib", 0, "fail when a peak passes idle RSS by more than this many MiB (0: report only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	folder, err := os.MkdirTemp("", "loadtest-slowread-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(folder)
	skill := filepath.Join(folder, "big-demo")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: big-demo\ndescription: A skill with one big file.\n---\n# Big demo\n\nSee big.bin.\n"), 0o644); err != nil {
		return err
	}
	big := make([]byte, *fileMiB<<20)
	_, _ = rand.Read(big) // binary: answered base64, a third larger
	if err := os.WriteFile(filepath.Join(skill, "big.bin"), big, 0o644); err != nil {
		return err
	}
	fmt.Printf("slowread: %s; %d MiB folder file, readers take 64 KiB every %s; a fresh server for each count\n", *bin, *fileMiB, *every)
	failed := false
	for _, c := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return fmt.Errorf("--readers: %q is not a count", c)
		}
		above, err := slowreadRun(*bin, folder, n, *every, int64(len(big)))
		if err != nil {
			return err
		}
		if *maxAbove > 0 && above>>10 > int64(*maxAbove) {
			failed = true
		}
	}
	if failed {
		return fmt.Errorf("peak RSS above idle by more than --max-above-idle-mib %d", *maxAbove)
	}
	return nil
}

// slowreadRun starts a server on folder, lets n slow readers read the big
// file, and prints and returns the peak above idle (KiB).
func slowreadRun(bin, folder string, n int, every time.Duration, size int64) (int64, error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	dataDir, err := os.MkdirTemp("", "loadtest-slowread-data-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dataDir)
	s, err := start(bin, addr, dataDir, "", "--mcp-addr", httpAddr, "--skills-folder", folder)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	rpcURL := "http://" + httpAddr + "/rpc"
	body, _ := json.Marshal(rpcReq(1, "read_skill_file", map[string]any{"name": "big-demo", "path": "big.bin"}))
	time.Sleep(2 * time.Second) // let the start-up settle before the idle figure
	idle := s.statusKB("VmRSS")
	base := s.resetPeak()
	var answered, refusals atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	t0 := time.Now()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				wait, err := slowReadOnce(client, rpcURL, body, every, size)
				if err != nil {
					errs[i] = err
					return
				}
				if wait == 0 {
					answered.Add(1)
					return
				}
				refusals.Add(1)
				if attempt > 1000 {
					errs[i] = fmt.Errorf("refused %d times", attempt)
					return
				}
				time.Sleep(wait)
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	peak := s.statusKB("VmHWM")
	for _, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("%d readers: %w", n, err)
		}
	}
	above := peak - idle
	fmt.Printf("  %d slow readers: %d answers of %d MiB in %.1f s, %d refusals (503, Retry-After) retried; RSS idle %d MiB, before %d MiB, peak %d MiB (+%d MiB above idle)\n",
		n, answered.Load(), size>>20, took.Seconds(), refusals.Load(), idle>>10, base>>10, peak>>10, above>>10)
	return above, nil
}

// slowReadOnce reads one answer slowly and checks it; wait > 0 when the
// server refused for lack of room and said when to ask again.
func slowReadOnce(client *http.Client, url string, body []byte, every time.Duration, size int64) (wait time.Duration, err error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		_, _ = io.Copy(io.Discard, resp.Body)
		return time.Duration(max(secs, 1)) * time.Second, nil
	}
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		k, err := io.ReadFull(resp.Body, buf)
		got.Write(buf[:k])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return 0, err
		}
		time.Sleep(every)
	}
	var r struct {
		Result struct {
			Size     int64  `json:"size"`
			Encoding string `json:"encoding"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(got.Bytes(), &r); err != nil || r.Error != nil || r.Result.Size != size || r.Result.Encoding != "base64" {
		return 0, fmt.Errorf("answer %d: %s (%v)", resp.StatusCode, truncate(got.String(), 200), err)
	}
	return 0, nil
}
