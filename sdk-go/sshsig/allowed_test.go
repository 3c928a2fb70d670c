package sshsig

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The allowed_signers file the agreement tests use; {A} {B} {C} are keys, D is
// listed nowhere.
const allowedTemplate = `# team signers
alice@example.com {A}

bob@example.com,"carol smith" namespaces="iii-skills" {B} bob's laptop
*@ops.example.com namespaces="git,iii-*",valid-after="20240101Z",valid-before="20250101Z" {C}
dave@example.com,!eve@example.com VALID-AFTER="20260101" {A}
	"frank jones"	namespaces="!git,*"	{C}
erin@example.com namespaces="other" {B}
erin@example.com valid-before="20230101000000Z" {B}
e?in@example.com valid-after="202401010000UTC" {D}
`

func fillTemplate(ks map[string]*testKey) (string, map[string]*testKey) {
	named := map[string]*testKey{"A": ks["ed25519"], "B": ks["ecdsa-256"], "C": ks["rsa-3072"], "D": ks["ecdsa-384"], "E": ks["ecdsa-521"]}
	s := allowedTemplate
	for n, k := range named {
		s = strings.ReplaceAll(s, "{"+n+"}", authorizedLine(k.key))
	}
	return s, named
}

// Authorize agrees with `ssh-keygen -Y verify -I principal -n namespace` on
// every principal × key × namespace × time of a file that uses patterns,
// negation, quoting, namespaces and validity windows.
func TestAuthorizeAgreesWithOpenSSH(t *testing.T) {
	text, named := fillTemplate(keys(t))
	as, err := ParseAllowedSigners(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	principals := []string{"alice@example.com", "bob@example.com", "carol smith", "zed@ops.example.com", "dave@example.com",
		"eve@example.com", "frank jones", "erin@example.com", "eran@example.com", "nobody"}
	namespaces := []string{"iii-skills", "git", "other"}
	times := []string{"20220601000000Z", "20240601000000Z", "20270601000000Z"}
	var mu sync.Mutex
	allowedCount := 0
	t.Run("keys", func(t *testing.T) {
		for _, kn := range []string{"A", "B", "C", "D"} { // E, listed nowhere, is FindPrincipals' case
			k := named[kn]
			t.Run(kn, func(t *testing.T) {
				t.Parallel() // the ssh-keygen runs dominate
				for _, n := range namespaces {
					sig := keygenSign(t, k.priv, n, message, nil)
					for _, vt := range times {
						at := mustTime(t, vt)
						var anyOK []string
						for _, p := range principals {
							err := as.Authorize(p, k.key, n, at)
							ok, out := keygenVerify(t, text, p, n, sig, message, vt)
							if ok != (err == nil) {
								t.Errorf("key %s, principal %q, namespace %q, time %s: ssh-keygen ok=%v (%s), Authorize: %v",
									kn, p, n, vt, ok, strings.TrimSpace(out), err)
							}
							if err == nil {
								anyOK = append(anyOK, p)
							} else if !errors.Is(err, ErrNotAllowed) {
								t.Errorf("Authorize error %v does not match ErrNotAllowed", err)
							}
						}
						mu.Lock()
						allowedCount += len(anyOK)
						mu.Unlock()
						// Principal names one of them, and ssh-keygen agrees.
						p, err := as.Principal(k.key, n, at)
						switch {
						case err == nil:
							if ok, out := keygenVerify(t, text, p, n, sig, message, vt); !ok {
								t.Errorf("key %s, namespace %q, time %s: Principal %q, but ssh-keygen: %s", kn, n, vt, p, out)
							}
						case len(anyOK) > 0:
							t.Errorf("key %s, namespace %q, time %s: Principal: %v, but %q are allowed", kn, n, vt, err, anyOK)
						}
					}
				}
			})
		}
	})
	if allowedCount < 10 {
		t.Fatalf("only %d allowed combinations: the file tests too little", allowedCount)
	}
}

// FindPrincipals agrees with `ssh-keygen -Y find-principals`.
func TestFindPrincipalsAgreesWithOpenSSH(t *testing.T) {
	text, named := fillTemplate(keys(t))
	as, err := ParseAllowedSigners(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, kn := range []string{"A", "B", "C", "D", "E"} {
		k := named[kn]
		sig := keygenSign(t, k.priv, ns, message, nil)
		for _, vt := range []string{"20220601000000Z", "20240601000000Z", "20270601000000Z"} {
			want, stderr := keygenFindPrincipals(t, text, sig, vt)
			got, err := as.FindPrincipals(k.key, mustTime(t, vt))
			if !slices.Equal(got, want) || (err == nil) != (want != nil) {
				t.Errorf("key %s at %s: got %q (%v), ssh-keygen %q (%s)", kn, vt, got, err, want, stderr)
			}
			if err == nil {
				found++
			}
		}
	}
	if found < 5 {
		t.Fatalf("only %d keys found: the file tests too little", found)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse("20060102150405Z", s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// Times without Z are local, read as standard time the way ssh-keygen's
// mktime does: in a summer, an hour later than the wall clock.
func TestLocalTimesAgreeWithOpenSSH(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("not run: no time zone data: %v", err)
	}
	k := keys(t)["ed25519"]
	text := `summer valid-after="20240701" ` + authorizedLine(k.key) + "\n" +
		`winter valid-before="202401151200" ` + authorizedLine(k.key) + "\n"
	as, err := parseAllowedSigners(strings.NewReader(text), loc)
	if err != nil {
		t.Fatal(err)
	}
	sig := keygenSign(t, k.priv, ns, message, nil)
	for _, c := range []struct{ principal, at string }{
		{"summer", "20240630215959Z"}, {"summer", "20240630220000Z"}, {"summer", "20240630225959Z"}, {"summer", "20240630230000Z"},
		{"winter", "20240115105959Z"}, {"winter", "20240115110000Z"}, {"winter", "20240115110001Z"},
	} {
		ok, out := keygenVerify(t, text, c.principal, ns, sig, message, c.at, "TZ=Europe/Berlin")
		err := as.Authorize(c.principal, k.key, ns, mustTime(t, c.at))
		if ok != (err == nil) {
			t.Errorf("%s at %s: ssh-keygen ok=%v (%s), Authorize: %v", c.principal, c.at, ok, strings.TrimSpace(out), err)
		}
	}
}

// Bad lines are refused with their line number and what is wrong; where
// ssh-keygen also reads the line (find-principals parses every line up to a
// match), it complains about the same line.
func TestAllowedSignersBadLines(t *testing.T) {
	ks := keys(t)
	ed, rsaKey := ks["ed25519"], ks["rsa-3072"]
	edLine := authorizedLine(ed.key)
	edB64 := strings.Fields(edLine)[1]
	rsaB64 := strings.Fields(authorizedLine(rsaKey.key))[1]
	dir := t.TempDir()
	ca, err := makeKey(dir, "ca", "ed25519", "", "")
	if err != nil {
		t.Fatal(err)
	}
	user, err := makeKey(dir, "user", "ed25519", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := keygen(t, nil, nil, "-q", "-s", ca.priv, "-I", "u", "-n", "u", user.pub); !ok {
		t.Fatal(out)
	}
	cert := readFile(t, dir+"/user-cert.pub")

	for _, c := range []struct {
		name, line, want string
		openssh          bool // ssh-keygen complains about the line too
	}{
		{"principals only", "alice", "missing key", true},
		{"options split by a space", `alice namespaces="a" valid-after="20240101Z" ` + edLine, "options are separated by commas", true},
		{"principals then spaces", "alice   ", "missing key", true},
		{"type without key", "alice ssh-ed25519", "does not decode", true},
		{"bad base64", "alice ssh-ed25519 AAAA!!", "does not decode", true},
		{"type and key disagree", "alice ssh-ed25519 " + rsaB64, "the line says ssh-ed25519 but the key is ssh-rsa", true},
		{"misspelt type", "alice ssh-ed2559 " + edB64, `unknown key type "ssh-ed2559"`, true},
		{"unknown option", `alice foo="x" ` + edLine, `unknown option "foo"`, true},
		{"unquoted value", `alice namespaces=git ` + edLine, `quoted value`, true},
		{"unterminated option quote", `alice namespaces="git ` + edLine, "unterminated quote in the options", true},
		{"unterminated principal quote", `"alice ` + edLine, "unterminated quote in the principals", true},
		{"cert-authority", `alice cert-authority ` + edLine, "cert-authority is not supported", false},
		{"certificate key", `alice ` + strings.TrimSpace(cert), "certificates are not supported", false},
		{"security key", `alice sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t`, "security-key keys are not supported", false},
		{"short time", `alice valid-after="2024" ` + edLine, `invalid valid-after time "2024"`, true},
		{"month 13", `alice valid-before="20241301" ` + edLine, `invalid valid-before time "20241301"`, true},
		{"letters in time", `alice valid-before="2024O101" ` + edLine, `invalid valid-before time`, true},
		{"before 1970", `alice valid-after="19600101Z" ` + edLine, `invalid valid-after time`, true},
		{"window reversed", `alice valid-after="20250101Z",valid-before="20240101Z" ` + edLine, "valid-before is not after valid-after", true},
		{"namespaces twice", `alice namespaces="a",namespaces="b" ` + edLine, "namespaces given twice", true},
		{"trailing comma", `alice namespaces="a", ` + edLine, "end with a comma", true},
		{"junk after a value", `alice namespaces="a"x ` + edLine, `unexpected "x"`, true},
		{"empty principals", `"" ` + edLine, "empty principals", false},
		{"too long", "alice " + strings.Repeat("x", maxLineLength), "longer than", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "# signers\nok " + edLine + "\n" + c.line + "\nok2 " + edLine + "\n"
			_, err := ParseAllowedSigners(strings.NewReader(text))
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Msg, c.want) {
				t.Fatalf("got %v, want line 3: …%s…", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "allowed_signers line 3: ") {
				t.Fatalf("message %q does not start with the line", err)
			}
			t.Log(err)
			if !c.openssh {
				return
			}
			// Line 2 ("ok") would match first; ask about a file without it.
			noMatch := "# signers\n\n" + c.line + "\nok2 " + edLine + "\n"
			_, stderr := keygenFindPrincipals(t, noMatch, keygenSign(t, ed.priv, ns, message, nil), "")
			if !strings.Contains(stderr, "allowed_signers:3:") {
				t.Fatalf("ssh-keygen did not complain about line 3: %s", stderr)
			}
		})
	}
}

// Blank lines, comments, tabs, CRLF and trailing comments are fine, and a
// file read from disk names its path in errors.
func TestAllowedSignersGoodLines(t *testing.T) {
	k := keys(t)["ed25519"]
	line := authorizedLine(k.key)
	text := "\r\n   # comment\r\n\t\r\nalice\t" + line + "\tmy laptop\r\n" +
		`bob namespaces="a\"b" ` + line + "\n" + // a quote inside a value
		"carol " + strings.Replace(line, " ", "   ", 1) + "\n"
	as, err := ParseAllowedSigners(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(as.entries) != 3 || as.entries[0].line != 4 || as.entries[1].namespaces != `a"b` {
		t.Fatalf("entries: %+v", as.entries)
	}
	at := time.Now()
	if err := as.Authorize("alice", k.key, ns, at); err != nil {
		t.Fatal(err)
	}
	if err := as.Authorize("bob", k.key, `a"b`, at); err != nil {
		t.Fatal(err)
	}
	err = as.Authorize("bob", k.key, ns, at)
	var na *NotAllowedError
	if !errors.As(err, &na) || !strings.Contains(err.Error(), "line 5 permits namespaces") || na.Fingerprint == "" {
		t.Fatalf("bob in %s: %v", ns, err)
	}
	if err := as.Authorize("mallory", k.key, ns, at); err == nil || !strings.Contains(err.Error(), "no line lists this principal") {
		t.Fatalf("mallory: %v", err)
	}
	other := keys(t)["ecdsa-256"]
	if err := as.Authorize("alice", other.key, ns, at); err == nil || !strings.Contains(err.Error(), "other keys") {
		t.Fatalf("alice with another key: %v", err)
	}
	if _, err := as.FindPrincipals(other.key, at); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("FindPrincipals of an unlisted key: %v", err)
	}

	path := t.TempDir() + "/allowed_signers"
	writeFile(t, path, "ok "+line+"\nbad\n")
	if _, err := ReadAllowedSigners(path); err == nil || !strings.Contains(err.Error(), path+": allowed_signers line 2: ") {
		t.Fatalf("ReadAllowedSigners: %v", err)
	}
	if _, err := ReadAllowedSigners(path + ".absent"); err == nil {
		t.Fatal("absent file: no error")
	}
}

// matchPattern agrees with a direct transcription of OpenSSH's recursive
// match_pattern on every short pattern over a small alphabet.
func TestMatchPattern(t *testing.T) {
	alphabet := []string{"", "a", "b", "*", "?"}
	var words []string
	var gen func(string, int)
	gen = func(prefix string, n int) {
		words = append(words, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet[1:] {
			gen(prefix+c, n-1)
		}
	}
	gen("", 4)
	for _, p := range words {
		for _, s := range words {
			if strings.ContainsAny(s, "*?") {
				continue
			}
			if got, want := matchPattern(s, p), referenceMatch(s, p); got != want {
				t.Fatalf("matchPattern(%q, %q) = %v, want %v", s, p, got, want)
			}
		}
	}
	for _, c := range []struct {
		s, list string
		want    int
	}{
		{"alice", "alice", 1}, {"alice", "bob,alice", 1}, {"alice", "!alice,*", -1}, {"alice", "*,!alice", -1},
		{"bob", "!alice,*", 1}, {"bob", "!alice", 0}, {"Alice", "alice", 0}, {"", "", 0}, {"a", "a,,", 1},
		{"x", "x," + strings.Repeat("y", 1023), 0}, {"x", "x," + strings.Repeat("y", 1022), 1},
	} {
		if got := matchPatternList(c.s, c.list); got != c.want {
			t.Errorf("matchPatternList(%q, %q) = %d, want %d", c.s, clip([]byte(c.list)), got, c.want)
		}
	}
}

// referenceMatch is OpenSSH's match_pattern, recursion and all.
func referenceMatch(s, p string) bool {
	for {
		if p == "" {
			return s == ""
		}
		if p[0] == '*' {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			if p[0] != '?' && p[0] != '*' {
				for i := 0; i < len(s); i++ {
					if s[i] == p[0] && referenceMatch(s[i+1:], p[1:]) {
						return true
					}
				}
				return false
			}
			for i := 0; i < len(s); i++ {
				if referenceMatch(s[i:], p) {
					return true
				}
			}
			return false
		}
		if s == "" {
			return false
		}
		if p[0] != '?' && p[0] != s[0] {
			return false
		}
		s, p = s[1:], p[1:]
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
