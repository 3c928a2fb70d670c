package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// The stored records. Two state scopes per registry scope S:
//
//	S.history   key id       → head
//	S.versions  key 16 hex   → content row
//
// Both are written here and nowhere else, as JSON built directly (every
// new version writes both; encoding/json would scan and escape each body
// once more, for HTML nobody reads them as), with strings through
// wire.AppendJSONString and times through registry.AppendTimestamp, the
// registry's (upstream's) registered_at format.
//
// A head is one JSON object whose every part that changes on its own is a
// top-level field, so that registry instances sharing the state (engines on
// one Redis) change it with atomic operations (kv.Updater: state::update)
// instead of rewriting it from a copy another instance may have changed
// meanwhile:
//
//	{"id": "a/b",
//	 "seq": 7,                          highest version number ever given
//	 "deprecated": "use a/c",           when deprecated
//	 "labels": {"production": 6},
//	 "v6": {"row": "00000000000000a1", "bytes": 120, "at": "1764100000000000000",
//	        "sha256": "<hex>", "by": "alice@example.com", "fp": "SHA256:…"},
//	 "v7": {…},
//	 "y6": "the yank reason"}
//
// Large numbers (content row keys, times in nanoseconds) are strings: the
// real engine re-encodes a value it updates through Lua's cjson, which
// keeps 14 significant digits. Heads written before this format (a
// "versions" array, "latest" and the newest "sha256") are read as well and
// rewritten in it at their next change.

// head is the stored record of one id (S.history / id). It stays small
// (about 130 bytes per kept version): a new version rewrites it on a
// store of this process, and adds one field to it on shared state.
type head struct {
	ID  string
	Seq int
	// Versions are the kept versions, in version order.
	Versions   []headVersion
	Labels     map[string]int
	Yanked     map[int]string
	Deprecated string
	// legacy: read from the format before this one (a "versions" array).
	legacy bool
}

// headVersion is a kept version in a head: what retention, look-ups by
// number or digest and listings need. The rest of its metadata is in its
// content row.
type headVersion struct {
	N      int
	Key    uint64 // its content row's key (see contentKey)
	Bytes  int    // of its content
	At     int64  // registered, unix nanoseconds
	SHA256 string // hex of its content; "" in legacy heads except the newest
	// SignedBy and KeyFP: the signature's verdict (KeyFP "" unsigned;
	// SignedBy "" signed by a key allowed_signers does not trust).
	SignedBy, KeyFP string
}

// latest is the newest kept version's number (0: none).
func (hd *head) latest() int {
	if len(hd.Versions) == 0 {
		return 0
	}
	return hd.Versions[len(hd.Versions)-1].N
}

// versionField is the head field of version n.
func versionField(n int) string { return "v" + strconv.Itoa(n) }

// yankField is the head field of the yank of version n.
func yankField(n int) string { return "y" + strconv.Itoa(n) }

// contentRow is a version's stored record (S.versions / contentKey): its
// metadata and content.
type contentRow struct {
	ID string `json:"id"`
	Version
	Content string `json:"content"`
}

// contentKey renders a content row's key: a sequence in fixed-width hex,
// so rows are appended at the end of the store's tree, which costs a
// B+tree far less than inserts scattered over it.
func contentKey(k uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[k&15]
		k >>= 4
	}
	return string(b[:])
}

// appendVersionEntry renders the head entry of v.
func appendVersionEntry(b []byte, v headVersion) []byte {
	b = append(b, `{"row":"`...)
	b = append(b, contentKey(v.Key)...)
	b = append(b, `","bytes":`...)
	b = strconv.AppendInt(b, int64(v.Bytes), 10)
	b = append(b, `,"at":"`...)
	b = strconv.AppendInt(b, v.At, 10)
	b = append(b, `","sha256":`...)
	b = wire.AppendJSONString(b, v.SHA256)
	if v.SignedBy != "" {
		b = append(b, `,"by":`...)
		b = wire.AppendJSONString(b, v.SignedBy)
	}
	if v.KeyFP != "" {
		b = append(b, `,"fp":`...)
		b = wire.AppendJSONString(b, v.KeyFP)
	}
	return append(b, '}')
}

// encodeHead renders hd whole, fields in a fixed order (versions and
// yanks by number).
func encodeHead(hd *head) json.RawMessage {
	b := make([]byte, 0, 64+len(hd.ID)+len(hd.Deprecated)+140*len(hd.Versions)+24*len(hd.Labels))
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, hd.ID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(hd.Seq), 10)
	if hd.Deprecated != "" {
		b = append(b, `,"deprecated":`...)
		b = wire.AppendJSONString(b, hd.Deprecated)
	}
	if len(hd.Labels) > 0 {
		b = append(b, `,"labels":`...)
		b = appendLabels(b, hd.Labels)
	}
	for _, v := range hd.Versions {
		b = append(b, ',')
		b = wire.AppendJSONString(b, versionField(v.N))
		b = append(b, ':')
		b = appendVersionEntry(b, v)
	}
	yanked := make([]int, 0, len(hd.Yanked))
	for n := range hd.Yanked {
		yanked = append(yanked, n)
	}
	slices.Sort(yanked)
	for _, n := range yanked {
		b = append(b, ',')
		b = wire.AppendJSONString(b, yankField(n))
		b = append(b, ':')
		b = wire.AppendJSONString(b, hd.Yanked[n])
	}
	return append(b, '}')
}

func appendLabels(b []byte, labels map[string]int) []byte {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	b = append(b, '{')
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendJSONString(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(labels[k]), 10)
	}
	return append(b, '}')
}

// storedVersion is a version entry as stored in a head.
type storedVersion struct {
	Row    string `json:"row"`
	Bytes  int    `json:"bytes"`
	At     string `json:"at"`
	SHA256 string `json:"sha256"`
	By     string `json:"by"`
	FP     string `json:"fp"`
}

// legacyVersion is a version entry of a head in the format before.
type legacyVersion struct {
	N     int    `json:"n"`
	Key   uint64 `json:"key"`
	Bytes int    `json:"bytes"`
	At    int64  `json:"at"`
}

// numbered reads the number after a head field's one-letter prefix.
func numbered(field string, prefix byte) (int, bool) {
	if len(field) < 2 || field[0] != prefix || field[1] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(field[1:])
	return n, err == nil && n > 0
}

// parseHead reads a head in either format; an error says what is wrong.
func parseHead(raw json.RawMessage) (*head, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	hd := &head{}
	str := func(name string) (string, error) {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("field %q is not a string", name)
		}
		return s, nil
	}
	var err error
	if hd.ID, err = str("id"); err != nil {
		return nil, err
	}
	if hd.Deprecated, err = str("deprecated"); err != nil {
		return nil, err
	}
	if v, ok := fields["seq"]; ok {
		if err := json.Unmarshal(v, &hd.Seq); err != nil {
			var f float64 // cjson may write 7 as 7.0 in theory
			if json.Unmarshal(v, &f) != nil {
				return nil, fmt.Errorf("field \"seq\" is not a number")
			}
			hd.Seq = int(f)
		}
	}
	if v, ok := fields["labels"]; ok && string(v) != "null" && string(v) != "[]" {
		if err := json.Unmarshal(v, &hd.Labels); err != nil {
			return nil, fmt.Errorf("field \"labels\" is not an object of version numbers")
		}
	}
	byN := map[int]headVersion{}
	// The format before: a versions array, the newest's sha256.
	if v, ok := fields["versions"]; ok && string(v) != "null" {
		var old []legacyVersion
		if err := json.Unmarshal(v, &old); err != nil {
			return nil, fmt.Errorf("field \"versions\" is not a list of versions")
		}
		hd.legacy = true
		var latest int
		if l, ok := fields["latest"]; ok {
			_ = json.Unmarshal(l, &latest)
		}
		sum, _ := str("sha256")
		for _, o := range old {
			hv := headVersion{N: o.N, Key: o.Key, Bytes: o.Bytes, At: o.At}
			if o.N == latest {
				hv.SHA256 = sum
			}
			byN[o.N] = hv
		}
		hd.Seq = max(hd.Seq, latest)
	}
	for name, v := range fields {
		if n, ok := numbered(name, 'v'); ok {
			var sv storedVersion
			if err := json.Unmarshal(v, &sv); err != nil {
				return nil, fmt.Errorf("field %q is not a version entry", name)
			}
			key, err := strconv.ParseUint(sv.Row, 16, 64)
			if err != nil || len(sv.Row) != 16 {
				return nil, fmt.Errorf("field %q: row %q is not a content key", name, sv.Row)
			}
			at, _ := strconv.ParseInt(sv.At, 10, 64)
			byN[n] = headVersion{N: n, Key: key, Bytes: sv.Bytes, At: at, SHA256: sv.SHA256, SignedBy: sv.By, KeyFP: sv.FP}
		} else if n, ok := numbered(name, 'y'); ok {
			var reason string
			if json.Unmarshal(v, &reason) != nil {
				return nil, fmt.Errorf("field %q is not a yank reason", name)
			}
			if hd.Yanked == nil {
				hd.Yanked = map[int]string{}
			}
			hd.Yanked[n] = reason
		}
	}
	hd.Versions = make([]headVersion, 0, len(byN))
	for _, v := range byN {
		hd.Versions = append(hd.Versions, v)
	}
	slices.SortFunc(hd.Versions, func(a, b headVersion) int { return a.N - b.N })
	hd.Seq = max(hd.Seq, hd.latest())
	for n := range hd.Yanked {
		if !slices.ContainsFunc(hd.Versions, func(v headVersion) bool { return v.N == n }) {
			delete(hd.Yanked, n) // a yank of a version retention dropped
		}
	}
	return hd, nil
}

// decodeHead reads a head; ok is false for anything that is not one of an
// id with versions.
func decodeHead(raw json.RawMessage) (*head, bool) {
	hd, err := parseHead(raw)
	if err != nil || hd.ID == "" || len(hd.Versions) == 0 {
		return nil, false
	}
	return hd, true
}

func encodeContentRow(id string, v Version, content string) json.RawMessage {
	b := make([]byte, 0, len(content)+len(content)/16+len(v.Message)+len(v.Author)+len(v.Signature)+len(id)+256)
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, id)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(v.Version), 10)
	b = append(b, `,"registered_at":`...)
	b = wire.AppendJSONString(b, v.RegisteredAt)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(v.Bytes), 10)
	b = append(b, `,"sha256":"`...)
	b = append(b, v.SHA256...)
	b = append(b, '"')
	if v.Message != "" {
		b = append(b, `,"message":`...)
		b = wire.AppendJSONString(b, v.Message)
	}
	if v.Author != "" {
		b = append(b, `,"author":`...)
		b = wire.AppendJSONString(b, v.Author)
	}
	if v.SignedBy != nil {
		b = append(b, `,"signed_by":`...)
		b = wire.AppendJSONString(b, *v.SignedBy)
	}
	if v.Key != "" {
		b = append(b, `,"key":`...)
		b = wire.AppendJSONString(b, v.Key)
	}
	if v.Signature != "" {
		b = append(b, `,"signature":`...)
		b = wire.AppendJSONString(b, v.Signature)
	}
	b = append(b, `,"content":`...)
	b = wire.AppendJSONString(b, content)
	return append(b, '}')
}

// registeredAt is a stored registered_at in the registry's format. Rows
// written before history used it carry nine fraction digits always
// ("2026-03-04T05:06:07.100000000+00:00"); they are read as the instant
// they name and shown the way new rows are ("…07.100+00:00"). A value that
// is not a time is shown as stored.
func registeredAt(stored string) string {
	t, err := time.Parse(time.RFC3339Nano, stored)
	if err != nil {
		return stored
	}
	return registry.Timestamp(t)
}

// contentOf takes the content and its recorded sha256 out of a content
// row of version n of id without encoding/json's reflection (which cost a
// selector read more than the rest of it); ok is false for anything it
// does not recognize, and the caller decodes the row the slow way.
func contentOf(raw []byte, id string, n int) (content, sum string, ok bool) {
	var idOK, nOK, cOK, sOK bool
	scanned := wire.ScanObject(raw, func(key, value []byte) bool {
		switch string(key) {
		case "id":
			s, plain := wire.PlainString(value)
			idOK = plain && s == id
		case "version":
			v, err := strconv.Atoi(string(value))
			nOK = err == nil && v == n
		case "sha256":
			sum, sOK = wire.PlainString(value)
		case "content":
			content, cOK = registry.Unquote(value)
		}
		return true
	})
	return content, sum, scanned && idOK && nOK && cOK && sOK
}

func (h *History) getHead(id string) (*head, error) {
	raw, ok, err := h.st.Get(ctx(), h.heads, id)
	if err != nil {
		return nil, fmt.Errorf("read the history of %s %s: %w", h.cfg.Noun, id, err)
	}
	if !ok {
		return nil, nil
	}
	hd, err := parseHead(raw)
	if err != nil {
		return nil, fmt.Errorf("the history of %s %s does not decode: %w", h.cfg.Noun, id, err)
	}
	return hd, nil
}

func (h *History) putHead(hd *head) error {
	_, err := h.st.Commit(ctx(), kv.Write{Scope: h.heads, Key: hd.ID, Value: encodeHead(hd)})
	return err
}

// row reads the content row of version n of id at key, checking that its
// content is what its digests say: want is the sha256 the head recorded
// ("" when it did not).
func (h *History) row(id string, n int, key uint64, want string) (contentRow, error) {
	raw, ok, err := h.st.Get(ctx(), h.contents, contentKey(key))
	if err != nil {
		return contentRow{}, fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	var row contentRow
	if !ok || json.Unmarshal(raw, &row) != nil || row.ID != id || row.Version.Version != n {
		return contentRow{}, &Error{Corrupt: true, Msg: fmt.Sprintf("version %d of %s %s: its stored content is missing or does not decode", n, h.cfg.Noun, id)}
	}
	if err := h.checkContent(id, n, row.Content, row.SHA256, want); err != nil {
		return contentRow{}, err
	}
	row.RegisteredAt = registeredAt(row.RegisteredAt)
	return row, nil
}

// checkContent refuses content whose sha256 is not the one its row
// recorded, nor (when known) the one the head recorded: a row rewritten
// outside the registry (state::set on the versions scope of an engine that
// lets anyone write it) is never served.
func (h *History) checkContent(id string, n int, content, rowSum, headSum string) error {
	sum := Digest(content)
	got := hex.EncodeToString(sum[:])
	switch {
	case got != rowSum:
		return &Error{Corrupt: true, Msg: fmt.Sprintf("version %d of %s %s is refused: its stored content hashes to sha256 %s, not the %s its row records (the row was changed outside the registry)",
			n, h.cfg.Noun, id, got, clip(rowSum, 64))}
	case headSum != "" && got != headSum:
		return &Error{Corrupt: true, Msg: fmt.Sprintf("version %d of %s %s is refused: its stored content hashes to sha256 %s, not the %s its history records (the row was changed outside the registry)",
			n, h.cfg.Noun, id, got, headSum)}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	if s == "" {
		return "(none)"
	}
	return s
}

// keptVersion finds version n in id's summary.
func (h *History) keptVersion(id string, n int) (kept, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.sums[id]; s != nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				return k, true
			}
		}
	}
	return kept{}, false
}

// Content returns the content of version n of id, checked against the
// sha256 its row and its head recorded.
func (h *History) Content(id string, n int) (string, error) {
	if err := h.load(); err != nil {
		return "", err
	}
	k, found := h.keptVersion(id, n)
	if !found {
		return "", &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %d", h.cfg.Noun, id, n)}
	}
	if c, ok := h.cache.get(k.key, id, n); ok {
		return c, nil // checked when it was cached
	}
	want := k.digestHex()
	raw, ok, err := h.st.Get(ctx(), h.contents, contentKey(k.key))
	if err != nil {
		return "", fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	if c, sum, fast := contentOf(raw, id, n); ok && fast {
		if err := h.checkContent(id, n, c, sum, want); err != nil {
			return "", err
		}
		h.cache.put(k.key, id, n, c)
		return c, nil
	}
	row, err := h.row(id, n, k.key, want)
	if err != nil {
		return "", err
	}
	h.cache.put(k.key, id, n, row.Content)
	return row.Content, nil
}

// isHexDigest reports whether s is 64 lowercase hex digits.
func isHexDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }) < 0
}

// VersionOf returns the metadata of version n of id (its signature
// included), its content checked against its digests.
func (h *History) VersionOf(id string, n int) (Version, error) {
	if err := h.load(); err != nil {
		return Version{}, err
	}
	k, found := h.keptVersion(id, n)
	if !found {
		return Version{}, &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %d", h.cfg.Noun, id, n)}
	}
	row, err := h.row(id, n, k.key, k.digestHex())
	if err != nil {
		return Version{}, err
	}
	v := row.Version
	if f, ok := h.Facts(id, n); ok {
		v.Yanked = f.Yanked
	}
	return v, nil
}
