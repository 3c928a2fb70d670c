package sshsig

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// maxLineLength caps one allowed_signers line (a 16384-bit RSA key is about 2.8 KiB).
const maxLineLength = 64 << 10

// AllowedSigners is a parsed allowed_signers file: the format of
// `ssh-keygen -Y verify -f` and git's gpg.ssh.allowedSignersFile. Each line is
//
//	principals [options] key-type base64-key [comment]
//
// principals is a comma-separated pattern list (* and ?, !negation), quoted
// with "…" when it holds spaces; options are namespaces="pattern,…",
// valid-after="time" and valid-before="time", where time is YYYYMMDD,
// YYYYMMDDHHMM or YYYYMMDDHHMMSS followed by Z or UTC for UTC, or else in the
// local time zone's standard time, as ssh-keygen reads it. Lines starting with
// # and blank lines are skipped.
//
// cert-authority lines are refused: this package verifies plain keys, not
// certificates. Every other difference from ssh-keygen is strictness: a line
// ssh-keygen would skip with a complaint (bad key, unknown option, bad time)
// makes the whole file an error here, naming the line.
//
// An AllowedSigners is immutable and safe for concurrent use.
type AllowedSigners struct {
	entries []entry
}

type entry struct {
	line        int
	principals  string // the pattern list, quotes removed
	key         ssh.PublicKey
	keyBlob     []byte
	namespaces  string // pattern list; meaningful when hasNS
	hasNS       bool
	validAfter  int64 // Unix seconds; 0 = no bound
	validBefore int64
}

// ReadAllowedSigners parses the allowed_signers file at path.
func ReadAllowedSigners(path string) (*AllowedSigners, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sshsig: %w", err)
	}
	defer f.Close()
	s, err := ParseAllowedSigners(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseAllowedSigners parses an allowed_signers file. A bad line is a
// [*LineError] naming the line and what is wrong.
func ParseAllowedSigners(r io.Reader) (*AllowedSigners, error) {
	return parseAllowedSigners(r, time.Local)
}

func parseAllowedSigners(r io.Reader, loc *time.Location) (*AllowedSigners, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLength)
	s := &AllowedSigners{}
	n := 0
	for sc.Scan() {
		n++
		e, ok, msg := parseLine(sc.Text(), loc)
		if msg != "" {
			return nil, &LineError{Line: n, Msg: msg}
		}
		if ok {
			e.line = n
			s.entries = append(s.entries, e)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Line: n + 1, Msg: fmt.Sprintf("longer than %d bytes", maxLineLength)}
		}
		return nil, fmt.Errorf("sshsig: reading allowed_signers: %w", err)
	}
	return s, nil
}

const lineSyntax = `expected "principals [options] key-type base64-key"`

// parseLine parses one line; ok is false for blank and comment lines, msg
// says what is wrong with a bad one.
func parseLine(line string, loc *time.Location) (e entry, ok bool, msg string) {
	rest := strings.Trim(line, " \t\r\n")
	if rest == "" || rest[0] == '#' {
		return e, false, ""
	}
	principals, rest, msg := splitPrincipals(rest)
	if msg != "" {
		return e, false, msg
	}
	if principals == "" {
		return e, false, "empty principals; " + lineSyntax
	}
	e.principals = principals

	// The key, or options and then the key: ssh-keygen tries to read a key
	// first and falls back to options when that fails.
	tok, after := cutField(rest)
	if misspeltKeyType(tok, after) {
		return e, false, fmt.Sprintf("invalid key: unknown key type %q; %s", clip([]byte(tok)), lineSyntax)
	}
	if !isKeyTypeName(tok) {
		opts, after, msg := splitOptions(rest)
		if msg != "" {
			return e, false, msg
		}
		if msg := e.parseOptions(opts, loc); msg != "" {
			return e, false, msg
		}
		rest = strings.TrimLeft(after, " \t")
	}
	if rest == "" {
		return e, false, "missing key; " + lineSyntax
	}
	typ, rest := cutField(rest)
	b64, _ := cutField(strings.TrimLeft(rest, " \t"))
	if !isKeyTypeName(typ) {
		hint := lineSyntax
		if strings.Contains(typ, "=") {
			hint = "options are separated by commas, without spaces"
		}
		return e, false, fmt.Sprintf("invalid key: unknown key type %q; %s", clip([]byte(typ)), hint)
	}
	if err := checkKeyType(typ); err != nil {
		return e, false, "invalid key: " + strings.TrimPrefix(err.Error(), "sshsig: ")
	}
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || b64 == "" {
		return e, false, fmt.Sprintf("invalid key: the %s key's base64 %q does not decode", typ, clip([]byte(b64)))
	}
	key, err := parseKey(blob)
	if err != nil {
		return e, false, "invalid key: " + strings.TrimPrefix(err.Error(), "sshsig: ")
	}
	if key.Type() != typ {
		return e, false, fmt.Sprintf("invalid key: the line says %s but the key is %s", typ, key.Type())
	}
	e.key, e.keyBlob = key, key.Marshal()
	return e, true, ""
}

// misspeltKeyType reports whether tok, in the options-or-key position, was
// meant as a key type: it is no option, and the next field looks like a key
// (every key's base64 starts AAAA, the length of its type name).
func misspeltKeyType(tok, after string) bool {
	next, _ := cutField(strings.TrimLeft(after, " \t"))
	return !isKeyTypeName(tok) && !strings.ContainsAny(tok, "=,\"") &&
		!strings.EqualFold(tok, "cert-authority") && strings.HasPrefix(next, "AAAA")
}

// splitPrincipals takes the principals field the way ssh-keygen's strdelimw
// does: up to white space, or up to the closing quote when a " comes first.
func splitPrincipals(s string) (principals, rest, msg string) {
	i := strings.IndexAny(s, " \t\r\n\"")
	if i < 0 {
		return "", "", "only principals, missing key; " + lineSyntax
	}
	if s[i] == '"' {
		j := strings.IndexByte(s[i+1:], '"')
		if j < 0 {
			return "", "", "unterminated quote in the principals"
		}
		return s[:i] + s[i+1:i+1+j], strings.TrimLeft(s[i+2+j:], " \t\r\n"), ""
	}
	return s[:i], strings.TrimLeft(s[i+1:], " \t\r\n"), ""
}

// splitOptions takes the options field: up to white space outside quotes,
// where \" does not end a quote.
func splitOptions(s string) (opts, rest, msg string) {
	quoted := false
	i := 0
	for ; i < len(s) && (quoted || (s[i] != ' ' && s[i] != '\t')); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			i++
		case s[i] == '"':
			quoted = !quoted
		}
	}
	if quoted {
		return "", "", "unterminated quote in the options"
	}
	return s[:i], s[i:], ""
}

const knownOptions = `cert-authority, namespaces="…", valid-after="…" or valid-before="…"`

// parseOptions reads the comma-separated options into e. Names are matched
// without regard to case, as ssh-keygen does; values must be quoted.
func (e *entry) parseOptions(opts string, loc *time.Location) string {
	seen := map[string]bool{}
	for opts != "" {
		name := opts
		if i := strings.IndexAny(opts, "=,"); i >= 0 {
			name = opts[:i]
		}
		lname := strings.ToLower(name)
		opts = opts[len(name):]
		if name == "" {
			return "empty option; expected " + knownOptions
		}
		if seen[lname] {
			return fmt.Sprintf("option %s given twice", lname)
		}
		seen[lname] = true
		switch lname {
		case "cert-authority":
			return "cert-authority is not supported: this verifier accepts plain keys, not certificates; list each signer's key instead"
		case "namespaces", "valid-after", "valid-before":
			if !strings.HasPrefix(opts, `="`) {
				return fmt.Sprintf(`option %s: expected %s="…" with a quoted value`, lname, lname)
			}
			val, after, ok := dequote(opts[1:])
			if !ok {
				return fmt.Sprintf("option %s: missing end quote", lname)
			}
			opts = after
			switch lname {
			case "namespaces":
				e.namespaces, e.hasNS = val, true
			case "valid-after", "valid-before":
				t, msg := parseTime(val, loc)
				if msg != "" {
					return fmt.Sprintf("invalid %s time %q: %s", lname, clip([]byte(val)), msg)
				}
				if lname == "valid-after" {
					e.validAfter = t
				} else {
					e.validBefore = t
				}
			}
		default:
			return fmt.Sprintf("unknown option %q; expected %s", clip([]byte(name)), knownOptions)
		}
		if opts == "" {
			break
		}
		if opts[0] != ',' {
			return fmt.Sprintf("unexpected %q after option %s; expected a comma", clip([]byte(opts)), lname)
		}
		opts = opts[1:]
		if opts == "" {
			return "the options end with a comma"
		}
	}
	if e.validAfter != 0 && e.validBefore != 0 && e.validBefore <= e.validAfter {
		return "valid-before is not after valid-after"
	}
	return ""
}

// dequote reads a "…" value where \" stands for a quote.
func dequote(s string) (val, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case s[i] == '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

const timeSyntax = "expected YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, optionally followed by Z or UTC, at or after 1970"

// parseTime reads a valid-after/valid-before time as OpenSSH's
// parse_absolute_time does, into Unix seconds. Without a Z or UTC suffix the
// time is local and, like mktime with tm_isdst=0, read as standard time.
func parseTime(s string, loc *time.Location) (int64, string) {
	utc := false
	switch {
	case len(s) > 1 && strings.EqualFold(s[len(s)-1:], "Z"):
		utc, s = true, s[:len(s)-1]
	case len(s) > 3 && strings.EqualFold(s[len(s)-3:], "UTC"):
		utc, s = true, s[:len(s)-3]
	}
	if len(s) != 8 && len(s) != 12 && len(s) != 14 {
		return 0, timeSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, timeSyntax
		}
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to && i < len(s); i++ {
			n = n*10 + int(s[i]-'0')
		}
		return n
	}
	// year, month, day, hour, minute, second; the missing ones are 0
	f := [6]int{num(0, 4), num(4, 6), num(6, 8), num(8, 10), num(10, 12), num(12, 14)}
	// The ranges strptime accepts; mktime then normalises (Feb 31 is Mar 2 or 3).
	if f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 61 {
		return 0, timeSyntax
	}
	var t time.Time
	if utc {
		t = time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, time.UTC)
	} else {
		t = standardTime(f, loc)
	}
	if t.Unix() <= 0 {
		return 0, timeSyntax
	}
	return t.Unix(), ""
}

// standardTime is the wall-clock time f in loc read as standard time, as
// mktime does with tm_isdst=0: in summer, an hour later than the clock.
func standardTime(f [6]int, loc *time.Location) time.Time {
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, loc)
	if !t.IsDST() {
		return t
	}
	_, dstOff := t.Zone()
	for _, months := range []int{-6, 6, -3, 3} {
		if o := t.AddDate(0, months, 0); !o.IsDST() {
			_, stdOff := o.Zone()
			return t.Add(time.Duration(dstOff-stdOff) * time.Second)
		}
	}
	return t
}

// Authorize reports whether principal may sign in namespace with key at time
// at, as `ssh-keygen -Y verify -I principal -n namespace` decides: some line
// must list a principal pattern matching principal, exactly this key, a
// namespaces option (if any) matching namespace, and a validity window (if
// any) holding at. It returns nil or a [*NotAllowedError] saying why not.
func (s *AllowedSigners) Authorize(principal string, key ssh.PublicKey, namespace string, at time.Time) error {
	blob := key.Marshal()
	now := at.Unix()
	var reasons []string
	listed := false
	for i := range s.entries {
		e := &s.entries[i]
		if matchPatternList(principal, e.principals) != 1 {
			continue
		}
		listed = true
		if !bytes.Equal(e.keyBlob, blob) {
			continue
		}
		if e.hasNS && matchPatternList(namespace, e.namespaces) != 1 {
			reasons = append(reasons, fmt.Sprintf("line %d permits namespaces %q", e.line, e.namespaces))
			continue
		}
		if r := e.timeReason(now); r != "" {
			reasons = append(reasons, r)
			continue
		}
		return nil
	}
	reason := strings.Join(reasons, "; ")
	switch {
	case !listed:
		reason = "no line lists this principal"
	case reason == "":
		reason = "the lines for this principal list other keys"
	}
	return &NotAllowedError{Principal: principal, Fingerprint: ssh.FingerprintSHA256(key), Namespace: namespace, Reason: reason}
}

// FindPrincipals returns the principals of the first line that lists key and
// is valid at time at, in the order written, as
// `ssh-keygen -Y find-principals` prints them. Namespaces are not consulted
// (ssh-keygen does not either); a [*NotAllowedError] when no line matches.
func (s *AllowedSigners) FindPrincipals(key ssh.PublicKey, at time.Time) ([]string, error) {
	blob := key.Marshal()
	now := at.Unix()
	var reasons []string
	for i := range s.entries {
		e := &s.entries[i]
		if !bytes.Equal(e.keyBlob, blob) {
			continue
		}
		if r := e.timeReason(now); r != "" {
			reasons = append(reasons, r)
			continue
		}
		return splitPrincipalList(e.principals), nil
	}
	reason := strings.Join(reasons, "; ")
	if reason == "" {
		reason = "no line lists this key"
	}
	return nil, &NotAllowedError{Fingerprint: ssh.FingerprintSHA256(key), Reason: reason}
}

// Principal answers "who signed this?" for a verified signature: the first
// principal, in file order, for which Authorize(principal, key, namespace, at)
// holds, taken from the lines that list key, permit namespace and are valid
// at that time. Unlike git, which asks find-principals and then verifies,
// a key listed first for another namespace does not hide a later line.
func (s *AllowedSigners) Principal(key ssh.PublicKey, namespace string, at time.Time) (string, error) {
	blob := key.Marshal()
	now := at.Unix()
	var reasons []string
	for i := range s.entries {
		e := &s.entries[i]
		if !bytes.Equal(e.keyBlob, blob) {
			continue
		}
		if e.hasNS && matchPatternList(namespace, e.namespaces) != 1 {
			reasons = append(reasons, fmt.Sprintf("line %d permits namespaces %q", e.line, e.namespaces))
			continue
		}
		if r := e.timeReason(now); r != "" {
			reasons = append(reasons, r)
			continue
		}
		for _, p := range splitPrincipalList(e.principals) {
			if s.Authorize(p, key, namespace, at) == nil {
				return p, nil
			}
		}
		reasons = append(reasons, fmt.Sprintf("line %d names no principal its own patterns match", e.line))
	}
	reason := strings.Join(reasons, "; ")
	if reason == "" {
		reason = "no line lists this key"
	}
	return "", &NotAllowedError{Fingerprint: ssh.FingerprintSHA256(key), Namespace: namespace, Reason: reason}
}

// timeReason says why the line is not valid at now, or "".
func (e *entry) timeReason(now int64) string {
	if e.validAfter != 0 && now < e.validAfter {
		return fmt.Sprintf("line %d is valid only after %s", e.line, time.Unix(e.validAfter, 0).UTC().Format(time.RFC3339))
	}
	if e.validBefore != 0 && now > e.validBefore {
		return fmt.Sprintf("line %d expired at %s", e.line, time.Unix(e.validBefore, 0).UTC().Format(time.RFC3339))
	}
	return ""
}

// splitPrincipalList splits at commas and stops at the first empty name, as
// ssh-keygen's find-principals prints them.
func splitPrincipalList(list string) []string {
	var out []string
	for p := range strings.SplitSeq(list, ",") {
		if p == "" {
			break
		}
		out = append(out, p)
	}
	return out
}

// isKeyTypeName reports whether s names an SSH public key type OpenSSH knows,
// supported here or not; anything else in that position is read as options.
func isKeyTypeName(s string) bool {
	if supportedKeyType(s) || strings.HasSuffix(s, "-cert-v01@openssh.com") {
		return true
	}
	switch s {
	case ssh.KeyAlgoDSA, ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoSKED25519, "ssh-xmss@openssh.com":
		return true
	}
	return false
}

// matchPatternList is OpenSSH's match_pattern_list without lower-casing: 1
// when s matches a pattern of the comma-separated list, -1 when it matches a
// negated (!) one, 0 otherwise. A sub-pattern of 1023 bytes or more fails the
// whole list, as in OpenSSH.
func matchPatternList(s, list string) int {
	got := 0
	for i := 0; i < len(list); {
		negated := false
		if list[i] == '!' {
			negated = true
			i++
		}
		j := i
		for j < len(list) && list[j] != ',' {
			j++
		}
		if j-i >= 1023 {
			return 0
		}
		if matchPattern(s, list[i:j]) {
			if negated {
				return -1
			}
			got = 1
		}
		i = j
		if i < len(list) {
			i++ // the comma
		}
	}
	return got
}

// matchPattern is OpenSSH's match_pattern: * matches any bytes, ? one byte.
// It backtracks only to the last *, so it runs in O(len(s)·len(pattern)).
func matchPattern(s, pattern string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// cutField splits s at the first space or tab.
func cutField(s string) (field, rest string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}
