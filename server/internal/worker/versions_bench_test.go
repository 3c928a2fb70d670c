package worker

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// BenchmarkRegisterHistory registers 2 KiB skills in-process with history
// in the engine's store (as standalone): kind=new-id makes every call a
// version 1, kind=new-version a version N+1 at one of 1 000 ids,
// kind=unchanged re-registers the same body. write=joint stores the row
// and history in one transaction (kv.Engine, what standalone runs),
// write=separate sends every record through state::* (kv.III, a worker
// against another engine). The
// cross-process figures are server/internal/xproc's BenchmarkRegister and
// BenchmarkRegisterVersion.
func BenchmarkRegisterHistory(b *testing.B) {
	for _, kind := range []string{"new-id", "new-version", "unchanged"} {
		for _, joint := range []bool{true, false} {
			write := map[bool]string{true: "joint", false: "separate"}[joint]
			b.Run(fmt.Sprintf("kind=%s/write=%s/callers=64", kind, write), func(b *testing.B) {
				registerHistory(b, kind, joint)
			})
		}
	}
}

func registerHistory(b *testing.B, kind string, joint bool) {
	var opts []func(*stack, *Options)
	if joint {
		opts = append(opts, standalone)
	}
	s := startStack(b, b.TempDir(), opts...)
	if kind != "new-id" {
		loadSkills(b, s, 1000)
	}
	var seq atomic.Int64
	measure(b, 64, func(int) error {
		n := int(seq.Add(1))
		id, body := "w"+strconv.Itoa(n/100%10)+"/s"+strconv.Itoa(n%1000), body2K(n%1000)
		switch kind {
		case "new-id":
			id, body = "new/s"+strconv.Itoa(n), body2K(n)
		case "new-version":
			body = body2K(n + 1000)
		}
		return benchCall(s, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body})
	})
}

// BenchmarkReadSelector reads a 2 KiB skill plainly and by selector,
// in-process (history in the engine's store); the cross-process figures
// are server/internal/xproc's BenchmarkReadSelector.
func BenchmarkReadSelector(b *testing.B) {
	s := startStack(b, b.TempDir(), standalone)
	loadSkills(b, s, 100)
	for _, sel := range []string{"", "@1", "@latest"} {
		b.Run("uri=iii://id"+sel, func(b *testing.B) {
			measure(b, 1, func(i int) error {
				return benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://w0/s" + strconv.Itoa(i%100) + sel})
			})
		})
	}
}
