package history

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
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

// head is the stored record of one id (S.history / id). It stays small
// (about 40 bytes per kept version): a new version rewrites it.
type head struct {
	ID     string         `json:"id"`
	Latest int            `json:"latest"`
	SHA256 string         `json:"sha256"` // of the newest version
	Labels map[string]int `json:"labels,omitempty"`
	// Versions are the kept versions, oldest first.
	Versions []headVersion `json:"versions"`
}

// headVersion is a kept version in a head: what retention and look-ups
// need. The rest of its metadata is in its content row.
type headVersion struct {
	N     int    `json:"n"`
	Key   uint64 `json:"key"`   // its content row's key (see contentKey)
	Bytes int    `json:"bytes"` // of its content
	At    int64  `json:"at"`    // registered, unix nanoseconds
}

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

// encodeHead renders hd as json.Marshal does (labels in key order).
func encodeHead(hd *head) json.RawMessage {
	b := make([]byte, 0, 96+len(hd.ID)+48*len(hd.Versions)+24*len(hd.Labels))
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, hd.ID)
	b = append(b, `,"latest":`...)
	b = strconv.AppendInt(b, int64(hd.Latest), 10)
	b = append(b, `,"sha256":`...)
	b = wire.AppendJSONString(b, hd.SHA256)
	if len(hd.Labels) > 0 {
		names := make([]string, 0, len(hd.Labels))
		for k := range hd.Labels {
			names = append(names, k)
		}
		sort.Strings(names)
		b = append(b, `,"labels":{`...)
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(hd.Labels[k]), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"versions":`...)
	if hd.Versions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, v := range hd.Versions {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = strconv.AppendInt(b, int64(v.N), 10)
			b = append(b, `,"key":`...)
			b = strconv.AppendUint(b, v.Key, 10)
			b = append(b, `,"bytes":`...)
			b = strconv.AppendInt(b, int64(v.Bytes), 10)
			b = append(b, `,"at":`...)
			b = strconv.AppendInt(b, v.At, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// decodeHead reads a head; ok is false for anything that is not one.
func decodeHead(raw json.RawMessage) (*head, bool) {
	var hd head
	if json.Unmarshal(raw, &hd) != nil || hd.ID == "" || len(hd.Versions) == 0 {
		return nil, false
	}
	return &hd, true
}

func encodeContentRow(id string, v Version, content string) json.RawMessage {
	b := make([]byte, 0, len(content)+len(content)/16+len(v.Message)+len(v.Author)+len(id)+192)
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

// contentOf takes the content out of a content row of version n of id
// without encoding/json's reflection (which cost a selector read more than
// the rest of it); ok is false for anything it does not recognize, and the
// caller decodes the row the slow way.
func contentOf(raw []byte, id string, n int) (content string, ok bool) {
	var idOK, nOK, cOK bool
	scanned := wire.ScanObject(raw, func(key, value []byte) bool {
		switch string(key) {
		case "id":
			s, plain := wire.PlainString(value)
			idOK = plain && s == id
		case "version":
			v, err := strconv.Atoi(string(value))
			nOK = err == nil && v == n
		case "content":
			content, cOK = registry.Unquote(value)
		}
		return true
	})
	return content, scanned && idOK && nOK && cOK
}

func (h *History) getHead(id string) (*head, error) {
	raw, ok, err := h.st.Get(ctx(), h.heads, id)
	if err != nil {
		return nil, fmt.Errorf("read the history of %s %s: %w", h.cfg.Noun, id, err)
	}
	if !ok {
		return nil, nil
	}
	var hd head
	if err := json.Unmarshal(raw, &hd); err != nil {
		return nil, fmt.Errorf("the history of %s %s does not decode: %w", h.cfg.Noun, id, err)
	}
	return &hd, nil
}

func (h *History) putHead(hd *head) error {
	_, err := h.st.Commit(ctx(), kv.Write{Scope: h.heads, Key: hd.ID, Value: encodeHead(hd)})
	return err
}

// row reads the content row of version n of id at key.
func (h *History) row(id string, n int, key uint64) (contentRow, error) {
	raw, ok, err := h.st.Get(ctx(), h.contents, contentKey(key))
	if err != nil {
		return contentRow{}, fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	var row contentRow
	if !ok || json.Unmarshal(raw, &row) != nil || row.ID != id || row.Version.Version != n {
		return contentRow{}, fmt.Errorf("version %d of %s %s: its stored content is missing or does not decode", n, h.cfg.Noun, id)
	}
	row.RegisteredAt = registeredAt(row.RegisteredAt)
	return row, nil
}

// Content returns the content of version n of id.
func (h *History) Content(id string, n int) (string, error) {
	if err := h.load(); err != nil {
		return "", err
	}
	h.mu.RLock()
	var key uint64
	found := false
	if s := h.sums[id]; s != nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				key, found = k.key, true
				break
			}
		}
	}
	h.mu.RUnlock()
	if !found {
		return "", &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %d", h.cfg.Noun, id, n)}
	}
	if c, ok := h.cache.get(key, id, n); ok {
		return c, nil
	}
	raw, ok, err := h.st.Get(ctx(), h.contents, contentKey(key))
	if err != nil {
		return "", fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	if c, fast := contentOf(raw, id, n); ok && fast {
		h.cache.put(key, id, n, c)
		return c, nil
	}
	row, err := h.row(id, n, key)
	if err != nil {
		return "", err
	}
	h.cache.put(key, id, n, row.Content)
	return row.Content, nil
}
