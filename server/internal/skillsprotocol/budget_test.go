package skillsprotocol_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (127.0.0.x): to the server, another client.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// stalled sends body from ip over a raw connection and never reads the
// answer: a reader too slow to ever finish. Closing it ends the request.
func stalled(t *testing.T, url, ip string, body []byte) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
	return c
}

func rpcBody(method string, params any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return b
}

// bigBundle writes a folder bundle big.docs whose resources/big.txt holds
// size bytes.
func bigBundle(t *testing.T, size int) (root string, sum string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "big")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "resources"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "skill.toml"), []byte("name = \"big.docs\"\nversion = \"1.0.0\"\ndescription = \"A big file.\"\nkind = \"instruction\"\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("# Big\n\nA big file.\n"), 0o644))
	content := bytes.Repeat([]byte("0123456789abcde\n"), size/16)
	must(os.WriteFile(filepath.Join(dir, "resources", "big.txt"), content, 0o644))
	h := sha256.Sum256(content)
	return root, "sha256:" + hex.EncodeToString(h[:])
}

// Answers held by clients that never read share one budget: a client's
// stalled answers stay within its share (its further requests wait for
// them), another client still reads, and once the budget is full a
// request waits a bounded time, then gets 503 with Retry-After and a
// JSON-RPC error that says why; once the stalled clients go, everyone
// is served.
func TestAnswersInFlightShareOneBudget(t *testing.T) {
	const fileSize = 6 << 20
	pool := sp.NewAnswerBudget(16 << 20) // a share of 8 MiB per client
	e := newEnv(t, sp.Options{AnswerBudget: pool, AnswerWait: 300 * time.Millisecond})
	root, sum := bigBundle(t, fileSize)
	if err := e.rt.LoadFolders(root); err != nil {
		t.Fatal(err)
	}
	read := rpcBody("read_skill_file", map[string]any{"name": "big.docs", "path": "resources/big.txt"})
	attacker, other, third := "addr:127.0.0.1", "127.0.0.2", "127.0.0.3"

	// The attacker opens six never-reading requests: it holds one answer
	// (6 MiB) and its share (8 MiB) keeps the others waiting.
	var conns []net.Conn
	for range 6 {
		conns = append(conns, stalled(t, e.url, "127.0.0.1", read))
	}
	testutil.Eventually(t, 30*time.Second, "the attacker holds an answer", func() bool { return pool.Held(attacker) >= fileSize })
	if held := pool.Held(attacker); held > pool.Share() {
		t.Fatalf("the attacker holds %d bytes, above its share of %d", held, pool.Share())
	}

	// Another client reads the whole file meanwhile.
	readOK := func(c *http.Client) {
		t.Helper()
		resp, err := c.Post(e.url, "application/json", bytes.NewReader(read))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Result struct {
				Size    int    `json:"size"`
				SHA256  string `json:"sha256"`
				Content string `json:"content"`
			} `json:"result"`
			Error *rpcErr `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil || resp.StatusCode != http.StatusOK ||
			r.Result.Size != fileSize || r.Result.SHA256 != sum || len(r.Result.Content) != fileSize {
			t.Fatalf("read_skill_file: %d %+v %v (size %d)", resp.StatusCode, r.Error, err, len(r.Result.Content))
		}
	}
	readOK(clientFrom(other))

	// A third client stalls too: the budget (16 MiB) is full for a 6 MiB
	// answer, so the next request is refused after its bounded wait.
	conns = append(conns, stalled(t, e.url, third, read))
	testutil.Eventually(t, 30*time.Second, "the third client holds an answer", func() bool { return pool.Held("addr:"+third) >= fileSize })
	resp, err := clientFrom(other).Post(e.url, "application/json", bytes.NewReader(read))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var busy struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				RetryAfterMS int64 `json:"retry_after_ms"`
			} `json:"data"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || json.Unmarshal(raw, &busy) != nil ||
		busy.Error.Code != sp.CodeServerBusy || busy.Error.Data.RetryAfterMS != 1000 ||
		!strings.Contains(busy.Error.Message, "the server is busy: ") || !strings.Contains(busy.Error.Message, "bytes of requests and answers in flight are in use by other requests after waiting") {
		t.Fatalf("with the budget full: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}

	// The stalled clients go: their bytes come back, and reads succeed.
	for _, c := range conns {
		_ = c.Close()
	}
	testutil.Eventually(t, 30*time.Second, "the budget is free again", func() bool { return pool.Used() == 0 })
	readOK(clientFrom(other))
	readOK(http.DefaultClient)
}

// A batch of big answers draws on the same budget: its answers past the
// client's share are refused with CodeServerBusy (and the HTTP answer
// carries Retry-After), never built.
func TestBatchAnswersDrawOnTheBudget(t *testing.T) {
	pool := sp.NewAnswerBudget(8 << 20) // 4 MiB per client
	e := newEnv(t, sp.Options{AnswerBudget: pool, AnswerWait: 200 * time.Millisecond})
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": strings.Repeat("z", 3<<20), "kind": "text/plain"}, &c)
	var calls []map[string]any
	for i := range 4 {
		calls = append(calls, map[string]any{"jsonrpc": "2.0", "id": i, "method": "read_blob", "params": map[string]any{"blob_id": c.BlobID, "mode": "full"}})
	}
	body, _ := json.Marshal(calls)
	resp, err := http.Post(e.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answers []struct {
		Result *struct {
			Size int `json:"size"`
		} `json:"result"`
		Error *rpcErr `json:"error"`
	}
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&answers); err != nil || len(answers) != 4 {
		t.Fatalf("batch: %v %d answers", err, len(answers))
	}
	if answers[0].Result == nil || answers[0].Result.Size != 3<<20 {
		t.Fatalf("first answer: %+v", answers[0])
	}
	for _, a := range answers[1:] {
		if a.Error == nil || a.Error.Code != sp.CodeServerBusy || !strings.Contains(a.Error.Message, "of its share of 4194304 bytes") {
			t.Fatalf("answer past the share: %+v %+v", a.Result, a.Error)
		}
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("batch status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if pool.Used() != 0 {
		t.Fatalf("%d bytes still held after the batch", pool.Used())
	}
}

// One client cannot take every sandbox: with 2 sandboxes (a share of 1),
// a client's second long run waits for its first while another client's
// run takes the other sandbox and finishes first.
func TestSandboxesAreSharedBetweenClients(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t, sp.Options{ConcurrentRuns: 2})
	long := rpcBody("run_code", map[string]any{"language": "python", "code": "import time\ndef main(args):\n    time.sleep(120)\n    return 1\n",
		"limits": map[string]any{"timeout_ms": 150000}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hogDone := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(long))
			req.Header.Set("Content-Type", "application/json")
			resp, err := clientFrom("127.0.0.1").Do(req)
			if err == nil {
				resp.Body.Close()
			}
			hogDone <- 1
		}()
	}
	testutil.Eventually(t, 30*time.Second, "the hog's runs are under way", func() bool {
		return e.rt.SandboxSlots().Held("addr:127.0.0.1") == 1
	})
	resp, err := clientFrom("127.0.0.2").Post(e.url, "application/json", bytes.NewReader(rpcBody("run_code",
		map[string]any{"language": "python", "code": "def main(args):\n    return 7\n"})))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result run `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if r := out.Result; r.Status != "completed" || string(r.Output) != "7" {
		t.Fatalf("the other client's run: %+v", out.Result)
	}
	select {
	case <-hogDone:
		t.Fatal("a hog run ended before the other client's run: the other client waited for the hog's sandbox")
	default:
	}
	cancel()
	<-hogDone
	<-hogDone
}

// postFrom posts one request from loopback address ip and decodes the
// answer.
func postFrom(t *testing.T, url, ip, method string, params any) (int, http.Header, map[string]json.RawMessage) {
	t.Helper()
	resp, err := clientFrom(ip).Post(url, "application/json", bytes.NewReader(rpcBody(method, params)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp.StatusCode, resp.Header, out
}

// One client's blobs never push out another's: past its share it loses
// its own oldest, and a store full of other clients' blobs refuses new
// ones (503, Retry-After) instead of removing theirs.
func TestBlobsOfOneClientCannotPushOutAnothers(t *testing.T) {
	e := newEnv(t, sp.Options{MaxBlobBytes: 1000, MaxBlobStoreBytes: 4000}) // a share of 2000
	create := func(ip, fill string) (int, http.Header, map[string]json.RawMessage) {
		return postFrom(t, e.url, ip, "create_blob", map[string]any{"content": strings.Repeat(fill, 1000), "kind": "text/plain"})
	}
	idOf := func(out map[string]json.RawMessage) string {
		var r struct {
			BlobID string `json:"blob_id"`
		}
		if json.Unmarshal(out["result"], &r) != nil || r.BlobID == "" {
			t.Fatalf("create_blob: %s %s", out["result"], out["error"])
		}
		return r.BlobID
	}
	_, _, out := create("127.0.0.2", "v")
	victim := idOf(out)
	var attackers []string
	for range 10 {
		_, _, out := create("127.0.0.1", "a")
		attackers = append(attackers, idOf(out))
	}
	readable := func(id string) bool {
		_, _, out := postFrom(t, e.url, "127.0.0.9", "read_blob", map[string]any{"blob_id": id})
		return out["error"] == nil
	}
	if !readable(victim) {
		t.Fatal("the attacker's blobs pushed out the victim's")
	}
	for i, id := range attackers {
		if want := i >= 8; readable(id) != want {
			t.Fatalf("attacker blob %d readable: %v; want only its two newest (its share)", i, !want)
		}
	}
	_, _, out = create("127.0.0.3", "c")
	idOf(out) // 4000 of 4000 bytes now
	status, h, out := create("127.0.0.4", "d")
	var e2 rpcErr
	_ = json.Unmarshal(out["error"], &e2)
	if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || e2.Code != sp.CodeServerBusy ||
		!strings.Contains(e2.Message, "the blob store is full: other clients' blobs hold 4000 of its 4000 bytes") {
		t.Fatalf("a full store: %d %q %s", status, h.Get("Retry-After"), out["error"])
	}
	if !readable(victim) {
		t.Fatal("the victim's blob is gone")
	}
}
