package skillsext

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// The registry functions and trigger type that publish a View over iii.
const (
	FnCatalogList     = "skills::catalog-list"
	FnCatalogGet      = "skills::catalog-get"
	FnCatalogFile     = "skills::catalog-file"
	TriggerCatalogChg = "skills::catalog-on-change"
)

type listIn struct {
	After string `json:"after"`
	Limit int    `json:"limit"`
	// MaxBytes lowers the answer's byte budget (listBudget at most).
	MaxBytes int `json:"max_bytes,omitempty"`
}

type listOut struct {
	Skills []Skill `json:"skills"`
	More   bool    `json:"more"`
}

type getIn struct {
	Path string `json:"path"`
}

type getOut struct {
	Skill *Skill `json:"skill"`
}

type fileIn struct {
	Path   string `json:"path"`
	File   string `json:"file"`
	Offset int64  `json:"offset,omitempty"`
	// SHA256, when set, is the version the earlier chunks came from: a
	// file that changed since is refused with msgFileChanged.
	SHA256 string `json:"sha256,omitempty"`
	// MaxBytes lowers the chunk size (chunkBytes at most).
	MaxBytes int `json:"max_bytes,omitempty"`
}

type fileOut struct {
	Data   string `json:"data"`   // base64 of the bytes from offset, at most chunkBytes
	Size   int64  `json:"size"`   // of the whole file
	SHA256 string `json:"sha256"` // of the whole file: the version the chunk is from
}

// Answers stay well under the engine's frame limit (16 MiB by default): a
// file is sent in chunks of chunkBytes (base64 makes them 4/3 larger) and
// a listing stops once its skills encode to listBudget bytes.
const (
	chunkBytes = 4 << 20
	listBudget = 4 << 20
)

// msgNoSuchFile is the error message of skills::catalog-file for an
// unknown skill or file, sent with code rules.CodeNotFound; Remote maps
// the code back to ErrNoSuchFile.
const msgNoSuchFile = "no such skill file"

// msgFileChanged starts the error of skills::catalog-file for a chunk
// asked of a version (sha256) the file no longer has, sent with code
// CodeFileChanged; Remote then reads the file again from its start.
const msgFileChanged = "the file changed since its first chunk was read"

// CodeFileChanged is the error code of skills::catalog-file for a chunk of
// a version the file no longer has: the read starts over.
const CodeFileChanged = "FILE_CHANGED"

// readAttempts bounds how often Remote.ReadFile starts over on a file that
// keeps changing while it is read.
const readAttempts = 3

// Register publishes v on client: the three internal functions and the
// change trigger type (fired with {"path": …} on every change until ctx
// ends). Call it before the client connects, like every registration.
func Register(ctx context.Context, client *iii.Client, v *View, log *slog.Logger) error {
	decode := func(data json.RawMessage, into any, fn string) error {
		if len(data) == 0 || string(data) == "null" {
			return nil
		}
		if err := json.Unmarshal(data, into); err != nil {
			return iii.NewInvocationError(rules.CodeInvalidArguments, fmt.Sprintf("%s: invalid input: %s", fn, err))
		}
		return nil
	}
	fns := []struct {
		id, desc string
		h        iii.Handler
	}{
		{FnCatalogList, "Internal: skills of the catalog as the MCP Skills extension serves them, in path order ({after?, limit?, max_bytes?} → {skills, more}).",
			func(ctx context.Context, data json.RawMessage) (any, error) {
				var in listIn
				if err := decode(data, &in, FnCatalogList); err != nil {
					return nil, err
				}
				skills, more, err := v.ListSkills(ctx, in.After, in.Limit)
				if err != nil {
					return nil, err
				}
				budget := listBudget
				if in.MaxBytes > 0 {
					budget = min(budget, in.MaxBytes)
				}
				size := 0
				for i, sk := range skills {
					b, _ := json.Marshal(sk)
					if size += len(b); size > budget && i > 0 {
						return listOut{Skills: skills[:i], More: true}, nil
					}
				}
				return listOut{Skills: skills, More: more}, nil
			}},
		{FnCatalogGet, "Internal: one skill of the catalog as the MCP Skills extension serves it ({path} → {skill | null}).",
			func(ctx context.Context, data json.RawMessage) (any, error) {
				var in getIn
				if err := decode(data, &in, FnCatalogGet); err != nil {
					return nil, err
				}
				s, ok, err := v.Skill(ctx, in.Path)
				if err != nil || !ok {
					return getOut{}, err
				}
				return getOut{Skill: &s}, nil
			}},
		{FnCatalogFile, "Internal: the bytes of one file of a catalog skill, 4 MiB at a time ({path, file, offset?, sha256?, max_bytes?} → {data: base64, size, sha256}; a chunk of a version the file no longer has is refused).",
			func(ctx context.Context, data json.RawMessage) (any, error) {
				var in fileIn
				if err := decode(data, &in, FnCatalogFile); err != nil {
					return nil, err
				}
				b, sum, err := v.readFile(in.Path, in.File)
				if errors.Is(err, ErrNoSuchFile) {
					return nil, iii.NewInvocationError(rules.CodeNotFound, msgNoSuchFile)
				}
				if err != nil {
					return nil, err
				}
				version := hex.EncodeToString(sum[:])
				if in.SHA256 != "" && in.SHA256 != version {
					return nil, iii.NewInvocationError(CodeFileChanged, fmt.Sprintf("%s (sha256 %s, now %s)", msgFileChanged, in.SHA256, version))
				}
				if in.Offset < 0 || in.Offset > int64(len(b)) {
					return nil, iii.NewInvocationError(rules.CodeInvalidArguments, fmt.Sprintf("%s: offset %d is outside the file (%d bytes)", FnCatalogFile, in.Offset, len(b)))
				}
				n := int64(chunkBytes)
				if in.MaxBytes > 0 {
					n = min(n, int64(in.MaxBytes))
				}
				chunk := b[in.Offset:min(int64(len(b)), in.Offset+n)]
				return fileOut{Data: base64.StdEncoding.EncodeToString(chunk), Size: int64(len(b)), SHA256: version}, nil
			}},
	}
	for _, f := range fns {
		if _, err := client.RegisterFunction(f.id, f.h, iii.RegisterFunctionOptions{Description: f.desc, Metadata: iii.InternalMetadata}); err != nil {
			return fmt.Errorf("register %s: %w", f.id, err)
		}
	}
	ref, err := client.RegisterTriggerType(TriggerCatalogChg, "Fires {path} each time a skill of the catalog changes (MCP Skills extension view).", iii.AcceptAll(log, TriggerCatalogChg))
	if err != nil {
		return fmt.Errorf("register %s: %w", TriggerCatalogChg, err)
	}
	// Until ctx ends: the view's watch stops with it.
	_, err = v.Watch(ctx, func(p string) {
		if err := ref.FireJSON(ctx, map[string]string{"path": p}); err != nil && log != nil {
			log.Warn("catalog change fan-out failed", "trigger_type", TriggerCatalogChg, "err", err)
		}
	})
	return err
}

// Remote reads the view another process published with Register.
type Remote struct {
	Client  *iii.Client
	Timeout time.Duration // per call (default 30 s)
	// PageBytes, when set, asks for listings cut at about that many bytes
	// instead of 4 MiB (at least one skill per answer): more answers, each
	// smaller. ListSkills reports more=true when it cut one.
	PageBytes int
	// ChunkBytes, when set, asks for files in chunks of that many bytes
	// instead of 4 MiB.
	ChunkBytes int
}

func (r *Remote) call(ctx context.Context, fn string, in, out any) error {
	t := r.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	if in == nil {
		in = struct{}{}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", fn, err)
	}
	raw, err := r.Client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: t})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: unexpected answer: %w", fn, err)
	}
	return nil
}

// notPublished reports a registry that does not publish its catalog (an
// upstream skills worker): it serves no skill:// skills.
func notPublished(err error) bool {
	var inv *iii.InvocationError
	return errors.As(err, &inv) && inv.Code == iii.CodeFunctionNotFound
}

// ListSkills calls skills::catalog-list (no skills when the registry does
// not publish its catalog).
func (r *Remote) ListSkills(ctx context.Context, after string, limit int) ([]Skill, bool, error) {
	var out listOut
	err := r.call(ctx, FnCatalogList, listIn{After: after, Limit: limit, MaxBytes: r.PageBytes}, &out)
	if notPublished(err) {
		return nil, false, nil
	}
	return out.Skills, out.More, err
}

// Skill calls skills::catalog-get.
func (r *Remote) Skill(ctx context.Context, p string) (Skill, bool, error) {
	var out getOut
	err := r.call(ctx, FnCatalogGet, getIn{Path: p}, &out)
	if notPublished(err) {
		return Skill{}, false, nil
	}
	if err != nil || out.Skill == nil {
		return Skill{}, false, err
	}
	return *out.Skill, true, nil
}

// ReadFile calls skills::catalog-file, chunk by chunk. Every chunk after
// the first names the version (sha256) the first came from, so the bytes
// returned are one version of the file: one that changes between chunks is
// read again from its start, up to readAttempts times.
func (r *Remote) ReadFile(ctx context.Context, p, file string) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		b, err := r.readFileOnce(ctx, p, file)
		var inv *iii.InvocationError
		if err == nil || !errors.As(err, &inv) || inv.Code != CodeFileChanged {
			return b, err
		}
		if attempt == readAttempts {
			return nil, fmt.Errorf("%s: %s of skill %s changed while it was read, %d times in a row: %w", FnCatalogFile, file, p, readAttempts, err)
		}
	}
}

func (r *Remote) readFileOnce(ctx context.Context, p, file string) ([]byte, error) {
	var buf []byte
	version := ""
	for {
		var out fileOut
		in := fileIn{Path: p, File: file, Offset: int64(len(buf)), SHA256: version, MaxBytes: r.ChunkBytes}
		if err := r.call(ctx, FnCatalogFile, in, &out); err != nil {
			var inv *iii.InvocationError
			if errors.As(err, &inv) && inv.Code == rules.CodeNotFound {
				return nil, ErrNoSuchFile
			}
			return nil, err
		}
		chunk, err := base64.StdEncoding.DecodeString(out.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FnCatalogFile, err)
		}
		if buf == nil {
			buf = make([]byte, 0, out.Size)
			version = out.SHA256
		}
		buf = append(buf, chunk...)
		if int64(len(buf)) >= out.Size {
			return buf, nil
		}
		if len(chunk) == 0 {
			return nil, fmt.Errorf("%s: an empty chunk at offset %d of %s of skill %s (%d bytes)", FnCatalogFile, len(buf), file, p, out.Size)
		}
	}
}

// Watch binds an internal function of this client to
// skills::catalog-on-change and calls changed for each event, from its
// return (the binding is in place) until stop is called or ctx ends.
func (r *Remote) Watch(ctx context.Context, changed func(string)) (stop func(), err error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	fn := "mcp::" + hex.EncodeToString(b[:]) + "::catalog-changed"
	ref, err := r.Client.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
		var ev struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(data, &ev) == nil && ev.Path != "" {
			changed(ev.Path)
		}
		return nil, nil
	}, iii.RegisterFunctionOptions{Description: "MCP server: follows catalog changes", Metadata: iii.InternalMetadata})
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", fn, err)
	}
	bindingID := uuid.NewString()
	if err := r.Client.RegisterTrigger(bindingID, TriggerCatalogChg, fn, json.RawMessage(`{}`)); err != nil {
		_ = ref.Unregister()
		return nil, fmt.Errorf("bind %s to %s: %w", fn, TriggerCatalogChg, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = r.Client.UnregisterTrigger(bindingID)
			_ = ref.Unregister()
		})
	}
	context.AfterFunc(ctx, stop)
	return stop, nil
}
