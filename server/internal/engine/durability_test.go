package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// childDataDirEnv makes the test binary run as a bare engine process (see
// TestMain); the durability test starts it, writes through it and kills it.
const childDataDirEnv = "III_ENGINE_TEST_CHILD_DATA_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDataDirEnv); dir != "" {
		runChildEngine(dir)
		return
	}
	os.Exit(m.Run())
}

func runChildEngine(dir string) {
	e, err := New(Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = e.Start()
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("URL", e.URL())
	select {} // until killed
}

// TestAcknowledgedWritesSurviveSIGKILL writes through a child engine
// process, kills it with SIGKILL while writes are still in flight, and
// checks that a new engine on the same data dir has every write the child
// acknowledged.
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDataDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "URL ") {
		t.Fatalf("child engine did not start: %q %v", line, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "URL "))

	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, _, err := ws.ReadMessage(); err != nil { // workerregistered
		t.Fatal(err)
	}

	const total, killAfter = 3000, 400
	ids := make(map[string]int, total)
	frames := make([][]byte, total)
	for i := range total {
		id := uuid.NewString()
		ids[id] = i
		frames[i], _ = json.Marshal(map[string]any{"type": "invokefunction", "invocation_id": id,
			"function_id": "state::set", "data": map[string]any{"scope": "durable", "key": fmt.Sprintf("k%04d", i),
				"value": map[string]any{"i": i}}})
	}

	var mu sync.Mutex
	acked := map[int]bool{}
	enough := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var res struct {
				InvocationID string          `json:"invocation_id"`
				Error        json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &res) != nil || res.Error != nil {
				t.Errorf("unexpected frame %s", data)
				continue
			}
			mu.Lock()
			acked[ids[res.InvocationID]] = true
			if len(acked) == killAfter {
				close(enough)
			}
			mu.Unlock()
		}
	}()
	go func() {
		for _, f := range frames {
			if ws.WriteMessage(websocket.TextMessage, f) != nil {
				return
			}
		}
	}()
	<-enough
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	<-readDone // every ack the child managed to send has been counted

	mu.Lock()
	n := len(acked)
	mu.Unlock()
	t.Logf("child acknowledged %d of %d writes before SIGKILL", n, total)

	e, err := New(Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer e.Close()
	for i := range acked {
		v, ok, err := e.store.Get("durable", fmt.Sprintf("k%04d", i))
		if err != nil || !ok || string(v) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("acknowledged write %d lost after SIGKILL: %s %v %v", i, v, ok, err)
		}
	}
	// And over the protocol, through a fresh engine.
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	w := dialWorker(t, e.URL())
	var vals []json.RawMessage
	mustUnmarshal(t, w.result("state::list", map[string]any{"scope": "durable"}), &vals)
	if len(vals) < n {
		t.Fatalf("state::list has %d values; %d were acknowledged", len(vals), n)
	}
}
