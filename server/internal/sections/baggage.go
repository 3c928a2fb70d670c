package sections

// The section chain in W3C baggage. Publishers on the official Node and
// Python iii-sdk clients do not pass a handler's invocation metadata on to
// the calls it makes, so the chain in metadata (chainKey) is lost in their
// hands. What those clients do carry from a handler's invocation into its
// own calls is the W3C trace context: the Node client with OpenTelemetry
// enabled (its default; OTEL_ENABLED=false turns it off), the Python client
// always (OpenTelemetry's default propagators are tracecontext,baggage).
// Baggage holds arbitrary key=value entries and comes back unchanged, so
// the registry puts the chain there too.
//
// The entry's value is the chain as a JSON array, percent-encoded with
// only unreserved characters left as they are, so every client's decode
// and re-encode (JavaScript's decodeURIComponent / encodeURIComponent,
// Python's unquote_plus / quote_plus) hands back the same JSON.

import (
	"encoding/json"
	"net/url"
	"strings"
)

const (
	// baggageChainKey is the baggage entry that carries the section chain.
	baggageChainKey = "iii-skills-section-chain"
	// maxBaggageBytes is W3C's limit on a whole baggage header; longer
	// baggage is not read and not passed on.
	maxBaggageBytes = 8192
)

// chainFromBaggage returns the section chain of a W3C baggage header, nil
// when it has none or the entry is not ours.
func chainFromBaggage(baggage string) []string {
	if baggage == "" || len(baggage) > maxBaggageBytes {
		return nil
	}
	for _, member := range strings.Split(baggage, ",") {
		key, value, ok := strings.Cut(member, "=")
		if !ok || strings.TrimSpace(key) != baggageChainKey {
			continue
		}
		value, _, _ = strings.Cut(value, ";") // member properties
		decoded, err := url.QueryUnescape(strings.TrimSpace(value))
		if err != nil {
			return nil
		}
		var chain []string
		if json.Unmarshal([]byte(decoded), &chain) != nil {
			return nil
		}
		return chain
	}
	return nil
}

// withChain returns baggage with its chain entry set to chain: the other
// members are kept as they came (they belong to the caller's trace), ours
// is replaced.
func withChain(baggage string, chain []string) string {
	raw, _ := json.Marshal(chain)
	entry := baggageChainKey + "=" + escapeBaggageValue(string(raw))
	if len(baggage) > maxBaggageBytes {
		return entry
	}
	members := []string{entry}
	for _, member := range strings.Split(baggage, ",") {
		key, _, _ := strings.Cut(member, "=")
		if m := strings.TrimSpace(member); m != "" && strings.TrimSpace(key) != baggageChainKey {
			members = append(members, m)
		}
	}
	out := strings.Join(members, ",")
	if len(out) > maxBaggageBytes {
		return entry
	}
	return out
}

// escapeBaggageValue percent-encodes every byte but A-Z a-z 0-9 - _ . ~.
func escapeBaggageValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
