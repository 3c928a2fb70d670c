# Stress: fuzzing, the hostile-load soak, the /rpc memory attacks and the kill -9
# durability check (load generator tools/loadtest). Included by the root Makefile.
#
#   make fuzz        each fuzz target below for FUZZTIME (default 30s); their seed
#                    corpora already run in `make test` (go test runs Fuzz seeds)
#   make soak        bin/skills under 1000 fetching clients: 30 s alone, then 60 s
#                    beside 3 clients that never read; errors (must be 0), p50/p99
#                    of each phase, RSS over time (must return within 20 % of the
#                    pre-load value of the warm, idle server). Not in make test.
#                    SOAK_HOG_REDIAL=1: the never-reading clients dial again when
#                    dropped; SOAK_PPROF=DIR saves the server's heap, goroutine
#                    and CPU profiles there.
#   make rpcmem      the /rpc memory attack from outside the process: peak RSS of
#                    bin/skills under small /rpc requests that took gigabytes
#                    (one 8 MiB blob 200 times in input_blobs, a batch of 60
#                    full read_blob, 31 MiB batches and params, 60 concurrent
#                    reads, 32 concurrent batches of 60 full read_blob;
#                    docs/benchmarks.md). Fails above RPCMEM_MAX_MIB
#                    (default 400). Not in make test.
#   make slowread    32 and 64 concurrent slow readers (64 KiB every 10 ms) of a 15 MiB
#                    folder file over /rpc and over MCP (resources/read): peak RSS of bin/skills
#                    above idle (docs/benchmarks.md). Fails above SLOWREAD_MAX_MIB (default 512).
#                    Not in make test.
#   make test-kill9  64 concurrent writers (skills::register + state::set), SIGKILL,
#                    restart, read back: 0 acknowledged writes may be missing, 3 runs
#                    (~30 s; part of make test)

FUZZTIME ?= 30s
SOAK_CLIENTS ?= 1000
SOAK_DURATION ?= 60s
SOAK_BASELINE ?= 30s
SOAK_HOG_REDIAL ?=
SOAK_PPROF ?=
RPCMEM_MAX_MIB ?= 400
SLOWREAD_MAX_MIB ?= 512
LOADTEST := $(BIN)/loadtest

FUZZ_TARGETS := \
	./server/internal/registry:FuzzParseURI \
	./server/internal/registry:FuzzTitleDescription \
	./server/internal/registry:FuzzNormalizeOutputs \
	./server/internal/registry:FuzzPrettyJSON \
	./sdk-go/rules:FuzzValidators \
	./sdk-go/rules:FuzzRustQuote \
	./sdk-go/wire:FuzzValid \
	./sdk-go/wire:FuzzHasSpace \
	./server/internal/engine:FuzzHandleFrame \
	./server/internal/engine:FuzzStateUpdateOps \
	./server/internal/engine:FuzzParseArgs \
	./server/internal/registry:FuzzDecodeInputs \
	./server/internal/registry:FuzzUnquote \
	./server/internal/engine:FuzzScanState \
	./server/internal/engine:FuzzStampCaller \
	./server/internal/httpguard:FuzzCheck \
	./sdk-go/skills:FuzzDecodeArguments \
	./sdk-go/skills/internal/driver:FuzzDecodeCommand \
	./sdk-go/wire:FuzzScanResultFrame \
	./sdk-go/sshsig:FuzzVerify \
	./sdk-go/sshsig:FuzzAllowedSigners \
	./sdk-go/sshsig:FuzzMatchPattern \
	./server/internal/catalog:FuzzFrontmatter \
	./server/internal/skillsprotocol:FuzzParseManifest \
	./server/internal/skillsprotocol:FuzzBuildEntry \
	./server/internal/skillsprotocol:FuzzRPCParams \
	./server/internal/skillarchive:FuzzRead \
	./server/internal/skillarchive:FuzzCleanName \
	./server/internal/skilladd:FuzzParseSource

.PHONY: fuzz soak test-kill9 loadtest rpcmem slowread

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

loadtest:
	@mkdir -p $(BIN)
	cd tools && $(GO) build -o $(LOADTEST) ./loadtest

soak: build loadtest
	$(LOADTEST) soak --skills $(BIN)/skills --clients $(SOAK_CLIENTS) --baseline $(SOAK_BASELINE) --duration $(SOAK_DURATION) \
		$(if $(SOAK_HOG_REDIAL),--hog-redial) $(if $(SOAK_PPROF),--pprof-dir $(SOAK_PPROF))

rpcmem: build loadtest sandbox-deps
	LOADTEST_SKILLS_LOG=error $(LOADTEST) rpcmem --skills $(BIN)/skills --max-peak-mib $(RPCMEM_MAX_MIB)

slowread: build loadtest
	LOADTEST_SKILLS_LOG=error $(LOADTEST) slowread --skills $(BIN)/skills --max-above-idle-mib $(SLOWREAD_MAX_MIB)

test-kill9: build loadtest
	$(LOADTEST) kill9 --skills $(BIN)/skills --writers 64 --runs 3

TEST_TARGETS += test-kill9
