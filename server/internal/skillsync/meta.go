package skillsync

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MetaPrefix namespaces what the registry adds to MCP _meta (the origin
// key is io.iii-skills/origin). Over MCP the version facts are read from
// MetaPrefix+key; over iii from the catalog entry's own fields of the same
// names: version, sha256, signed_by, key, yanked, deprecated.
const MetaPrefix = "io.iii-skills/"

// parseMeta reads the version facts through get (which returns a key's raw
// JSON value and whether it is present); skill names the entry in errors.
func parseMeta(skill string, get func(key string) (json.RawMessage, bool)) (Meta, error) {
	var m Meta
	bad := func(key string, raw json.RawMessage, want string) error {
		return fmt.Errorf("skill %s: the registry's %s is %s; expected %s", skill, key, clip(string(raw), 80), want)
	}
	str := func(key string) (string, bool, error) {
		raw, ok := get(key)
		if !ok || string(raw) == "null" {
			return "", ok, nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", true, bad(key, raw, "a string or null")
		}
		return s, true, nil
	}
	if raw, ok := get("version"); ok && string(raw) != "null" {
		var n int
		var s string
		switch {
		case json.Unmarshal(raw, &n) == nil:
		case json.Unmarshal(raw, &s) == nil:
			var err error
			if n, err = strconv.Atoi(s); err != nil {
				return m, bad("version", raw, "a version number")
			}
		default:
			return m, bad("version", raw, "a version number")
		}
		if n < 1 {
			return m, bad("version", raw, "a version number from 1")
		}
		m.Version = n
	}
	sum, _, err := str("sha256")
	if err != nil {
		return m, err
	}
	if sum != "" {
		sum = strings.TrimPrefix(sum, "sha256:")
		if !isHexDigest(sum) {
			return m, bad("sha256", json.RawMessage(strconv.Quote(sum)), "64 lowercase hex digits")
		}
		m.SHA256 = sum
	}
	signer, present, err := str("signed_by")
	if err != nil {
		return m, err
	}
	if present {
		m.Signed, m.SignedBy = "unsigned", signer
		if signer != "" {
			m.Signed = "signed"
		}
	}
	if m.Key, _, err = str("key"); err != nil {
		return m, err
	}
	if m.Yanked, _, err = str("yanked"); err != nil {
		return m, err
	}
	if m.Deprecated, _, err = str("deprecated"); err != nil {
		return m, err
	}
	return m, nil
}

// isHexDigest reports whether s is a sha256 in lowercase hex.
func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
