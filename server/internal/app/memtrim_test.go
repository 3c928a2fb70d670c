package app

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

func forcedGCs() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumForcedGC
}

func TestTrimAfterABurstOfChanges(t *testing.T) {
	cat := catalog.New()
	src, err := cat.AddSource("published", catalog.RankPublished)
	if err != nil {
		t.Fatal(err)
	}
	stop := trimAfterChanges(cat, 64<<10, 10*time.Millisecond)
	defer stop()
	before := forcedGCs()
	body := "# Skill\n\n" + strings.Repeat("x", 4<<10)
	for i := range 32 { // 128 KiB of bodies, over the 64 KiB threshold
		if err := src.Put(&catalog.Entry{ID: "t/s" + strconv.Itoa(i), Body: catalog.Inline(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for forcedGCs() == before {
		time.Sleep(10 * time.Millisecond) // the test's own timeout bounds the wait
	}
}
