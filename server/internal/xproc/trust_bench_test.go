package xproc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// Trust in content (docs/trust.md), measured like BenchmarkRegisterVersion
// and BenchmarkReadSelector: a `skills --standalone` process called from
// this one, the server's CPU per call read from /proc.

// BenchmarkRegisterSigned registers a changed 2 KiB body (a new version)
// per call at 1 000 ids, unsigned and signed with keys ssh-keygen made
// (the registry verifies the signature and looks the key up in its
// allowed_signers, under signing.require_signed), 1 and 16 writers. The
// signatures are made before the timer starts.
func BenchmarkRegisterSigned(b *testing.B) {
	testutil.NeedSSHKeygen(b)
	const ids = 1000
	for _, key := range []string{"unsigned", "ed25519", "ecdsa", "rsa"} {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("key=%s/writers=%d", key, writers), func(b *testing.B) {
				data := b.TempDir()
				var sign func(body string) string
				if key != "unsigned" {
					k := testutil.NewSSHKey(b, key)
					signer, err := sshsig.LoadSigner(k.Private, nil, "")
					if err != nil {
						b.Fatal(err)
					}
					sign = func(body string) string {
						sig, err := sshsig.Sign(signer, []byte(body), rules.SignatureNamespace)
						if err != nil {
							b.Fatal(err)
						}
						return string(sig)
					}
					signers := filepath.Join(data, "allowed_signers")
					if err := os.WriteFile(signers, []byte(k.AllowedLine("bench@example.com", rules.SignatureNamespace)+"\n"), 0o600); err != nil {
						b.Fatal(err)
					}
					cfg := "signing:\n  allowed_signers: " + signers + "\n  require_signed: [\"s/\"]\n"
					if err := os.WriteFile(filepath.Join(data, "config.yaml"), []byte(cfg), 0o600); err != nil {
						b.Fatal(err)
					}
				}
				skills := startSkills(b, data)
				payloads := make([]map[string]string, b.N)
				for n := range payloads {
					body := body2K(ids + n) // a header no other call has: a new version each
					payloads[n] = map[string]string{"skill": body}
					if sign != nil {
						payloads[n]["signature"] = sign(body)
					}
				}
				var seq atomic.Int64
				ops := make([]func() error, writers)
				for i := range ops {
					c := dial(b, skills.url)
					k := 0
					ops[i] = func() error {
						p := payloads[seq.Add(1)-1]
						// A writer keeps to its own ids (ownership).
						p["id"] = "s/w" + strconv.Itoa(i) + "/" + strconv.Itoa(k%(ids/writers))
						k++
						return call(c, rules.FnSkillsRegister, p)
					}
				}
				pid := skills.cmd.Process.Pid
				srv0 := procCPU(b, pid)
				measure(b, ops)
				b.ReportMetric(float64((procCPU(b, pid)-srv0).Microseconds())/float64(b.N), "server_cpu_µs/op")
			})
		}
	}
}

// BenchmarkReadPinned reads one of 100 2 KiB skills through
// skills::resources-read plainly (iii://id) and pinned by its digest
// (iii://id@sha256:<hex>), 1 and 64 callers; the pinned rows report their
// p50 and server CPU as a multiple of the plain row's (target ≤ 1.1).
func BenchmarkReadPinned(b *testing.B) {
	skills := startSkills(b, b.TempDir())
	c0 := dial(b, skills.url)
	const ids = 100
	pins := make([]string, ids)
	for i := range ids {
		body := body2K(i)
		if err := call(c0, rules.FnSkillsRegister, map[string]string{"id": "p/s" + strconv.Itoa(i), "skill": body}); err != nil {
			b.Fatal(err)
		}
		sum := sha256.Sum256([]byte(body))
		pins[i] = "@sha256:" + hex.EncodeToString(sum[:])
	}
	type row struct {
		p50 time.Duration
		cpu float64
	}
	plain := map[int]row{}
	for _, pinned := range []bool{false, true} {
		for _, callers := range []int{1, 64} {
			name := "plain"
			if pinned {
				name = "pinned=sha256"
			}
			b.Run(fmt.Sprintf("%s/callers=%d", name, callers), func(b *testing.B) {
				ops := make([]func() error, callers)
				var seq atomic.Int64
				for i := range ops {
					c := dial(b, skills.url)
					ops[i] = func() error {
						n := int(seq.Add(1)) % ids
						uri := "iii://p/s" + strconv.Itoa(n)
						if pinned {
							uri += pins[n]
						}
						return call(c, rules.FnSkillsResourcesRead, map[string]string{"uri": uri})
					}
				}
				pid := skills.cmd.Process.Pid
				srv0 := procCPU(b, pid)
				r := measure(b, ops)
				cpu := float64((procCPU(b, pid) - srv0).Microseconds()) / float64(b.N)
				b.ReportMetric(cpu, "server_cpu_µs/op")
				if !pinned {
					plain[callers] = row{r.p50, cpu}
					return
				}
				if base, ok := plain[callers]; ok && base.p50 > 0 && base.cpu > 0 {
					b.ReportMetric(float64(r.p50)/float64(base.p50), "x_plain_p50")
					b.ReportMetric(cpu/base.cpu, "x_plain_server_cpu")
				}
			})
		}
	}
}
