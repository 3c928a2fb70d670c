package main

// rpcmem: the /rpc memory attack, measured from outside the process. Small
// /rpc requests that used to take gigabytes: a run_code naming one 8 MiB
// blob 200 times in input_blobs, and a batch of 60 full read_blob calls.
// It reports the peak RSS (VmHWM, reset through /proc/PID/clear_refs
// before each attack) of a real `skills --standalone` process.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func rpcmem(args []string) error {
	fs := flag.NewFlagSet("loadtest rpcmem", flag.ContinueOnError)
	bin := fs.String("skills", "bin/skills", "the skills binary")
	blobMiB := fs.Int("blob-mib", 8, "size of the blob the attacks name (MiB; the server's blob cap is 8)")
	copies := fs.Int("copies", 200, "how many times run_code names the blob in input_blobs")
	batch := fs.Int("batch", 60, "read_blob calls (mode full) in the batch")
	parallel := fs.Int("parallel", 60, "concurrent single read_blob full requests (the third attack)")
	batches := fs.Int("batches", 32, "concurrent batches of --batch read_blob full (the last attack)")
	maxPeak := fs.Int("max-peak-mib", 0, "fail when an attack's peak RSS passes this many MiB (0: report only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	attacks := []struct {
		name     string
		body     func(blobID string) any
		parallel int // the request is sent this many times at once
	}{
		{fmt.Sprintf("run_code, input_blobs = %d x one blob", *copies), func(id string) any {
			ids := make([]string, *copies)
			for i := range ids {
				ids[i] = id
			}
			return rpcReq(2, "run_code", map[string]any{"language": "python", "code": "def main(args):\n    return 1\n", "input_blobs": ids})
		}, 1},
		{fmt.Sprintf("batch of %d read_blob full", *batch), func(id string) any {
			calls := make([]any, *batch)
			for i := range calls {
				calls[i] = rpcReq(10+i, "read_blob", map[string]any{"blob_id": id, "mode": "full"})
			}
			return calls
		}, 1},
		{"a 31 MiB batch of 10 million empty requests", func(string) any {
			return json.RawMessage("[" + strings.Repeat("{},", 31<<20/3) + "{}]")
		}, 1},
		{"a 31 MiB run_code whose args hold 16 million zeros", func(string) any {
			return json.RawMessage(`{"jsonrpc":"2.0","id":4,"method":"run_code","params":{"language":"python","code":"def main(a):\n    return 1\n","args":{"x":[` +
				strings.Repeat("0,", 31<<20/2) + `0]}}}`)
		}, 1},
		{"a 31 MiB run_code whose input_blobs hold 10 million empty strings", func(string) any {
			return json.RawMessage(`{"jsonrpc":"2.0","id":5,"method":"run_code","params":{"language":"python","code":"def main(a):\n    return 1\n","input_blobs":[` +
				strings.Repeat(`"",`, 31<<20/3) + `""]}}`)
		}, 1},
		{fmt.Sprintf("%d concurrent read_blob full", *parallel), func(id string) any {
			return rpcReq(3, "read_blob", map[string]any{"blob_id": id, "mode": "full"})
		}, *parallel},
		{fmt.Sprintf("%d concurrent batches of %d read_blob full", *batches, *batch), func(id string) any {
			calls := make([]any, *batch)
			for i := range calls {
				calls[i] = rpcReq(10+i, "read_blob", map[string]any{"blob_id": id, "mode": "full"})
			}
			return calls
		}, *batches},
	}
	fmt.Printf("rpcmem: %s; a fresh server for each attack\n", *bin)
	failed := false
	for _, a := range attacks {
		peak, err := rpcmemAttack(*bin, *blobMiB, a.name, a.body, max(a.parallel, 1))
		if err != nil {
			return err
		}
		if *maxPeak > 0 && peak>>10 > int64(*maxPeak) {
			failed = true
		}
	}
	if failed {
		return fmt.Errorf("peak RSS above --max-peak-mib %d", *maxPeak)
	}
	return nil
}

func rpcReq(id int, method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

// rpcmemAttack starts a server, stores one blobMiB blob, resets the peak
// RSS and sends body; it prints the figures and returns the peak (KiB).
func rpcmemAttack(bin string, blobMiB int, name string, body func(blobID string) any, parallel int) (int64, error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	dataDir, err := os.MkdirTemp("", "loadtest-rpcmem-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dataDir)
	s, err := start(bin, addr, dataDir, "", "--mcp-addr", httpAddr)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	rpcURL := "http://" + httpAddr + "/rpc"
	post := func(body any) ([]byte, error) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(rpcURL, "application/json", bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	idle := s.statusKB("VmRSS")
	out, err := post(rpcReq(1, "create_blob", map[string]any{"content": strings.Repeat("x", blobMiB<<20), "kind": "text/plain"}))
	if err != nil {
		return 0, err
	}
	var created struct {
		Result struct {
			BlobID string `json:"blob_id"`
		} `json:"result"`
	}
	if json.Unmarshal(out, &created) != nil || created.Result.BlobID == "" {
		return 0, fmt.Errorf("create_blob: %s", truncate(string(out), 300))
	}
	req := body(created.Result.BlobID)
	reqBytes, _ := json.Marshal(req)
	base := s.resetPeak()
	t0 := time.Now()
	outs := make([][]byte, parallel)
	errs := make([]error, parallel)
	var wg sync.WaitGroup
	for i := range parallel {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i], errs[i] = post(req) }()
	}
	wg.Wait()
	peak := s.statusKB("VmHWM")
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	out = outs[0]
	if parallel > 1 {
		total := 0
		for _, o := range outs {
			total += len(o)
		}
		out = append([]byte(fmt.Sprintf("(%d answers, %d B together) ", parallel, total)), out...)
	}
	fmt.Printf("  %s: request %d B -> response %d B in %d ms; RSS idle %d MiB, before %d MiB, peak %d MiB\n    answer: %s\n",
		name, len(reqBytes), len(out), time.Since(t0).Milliseconds(), idle>>10, base>>10, peak>>10, truncate(string(out), 200))
	return peak, nil
}

// resetPeak resets the child's VmHWM to its current RSS (clear_refs 5)
// and returns that RSS in KiB.
func (s *server) resetPeak() int64 {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
	return s.statusKB("VmRSS")
}

// statusKB reads one kB field of the child's /proc/PID/status.
func (s *server) statusKB(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}
