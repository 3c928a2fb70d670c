package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/kljensen/snowball/english"
)

// maxTokenLen drops longer "words" (base64 blobs, hashes, minified code):
// they never match a query and would only grow the vocabulary.
const maxTokenLen = 40

// maxStemCache bounds the term cache (words as written → terms); past it,
// new words are analysed on every use (real catalogs stay far below).
const maxStemCache = 1 << 18

// queryFiller are words of requests ("help me …", "I want to …") that say
// nothing about the task; Snowball's English stop words cover the rest.
var queryFiller = map[string]bool{
	"help": true, "want": true, "need": true, "needs": true, "please": true, "something": true,
	"way": true, "ways": true, "thing": true, "things": true, "stuff": true, "let": true, "lets": true,
	"get": true, "can": true, "could": true, "would": true, "like": true, "use": true, "using": true,
	"trying": true, "try": true, "go": true, "also": true, "just": true, "make": true, "sure": true,
}

// analyzer turns text into index terms: words split at anything that is
// not a letter or digit (so kebab-case, snake_case and path/segments split)
// and at camelCase humps, lower-cased, stop words dropped, then stemmed
// with the Snowball English (Porter2) stemmer. Stems are cached: stemming
// a word costs about a microsecond, a cache hit a map read.
type analyzer struct {
	mu    sync.RWMutex
	stems map[string]string
}

func newAnalyzer() *analyzer { return &analyzer{stems: map[string]string{}} }

// terms calls emit with each term of text, in order, and the word it
// came from as written (valid only during the call).
func (a *analyzer) terms(text string, emit func(word []byte, term string)) {
	splitWords(text, func(word string) {
		if t := a.term(word); t != "" {
			emit(unsafeBytes(word), t)
		}
	})
}

// maxQueryTerms bounds the work of one search: later distinct words of a
// longer query are ignored (a task is said in far fewer).
const maxQueryTerms = 32

// queryTerms are the distinct terms of a query, filler words dropped, in
// order of first use, at most maxQueryTerms.
func (a *analyzer) queryTerms(q string) []string {
	var out []string
	seen := map[string]bool{}
	a.terms(q, func(w []byte, t string) {
		if len(out) < maxQueryTerms && !seen[t] && !queryFiller[strings.ToLower(string(w))] {
			seen[t] = true
			out = append(out, t)
		}
	})
	return out
}

// term is the index term of a word as written: lower-cased and stemmed,
// or "" for a word that is dropped (stop word, one letter, too long).
// Results are cached by the word as written, so a word seen before costs
// one map read.
func (a *analyzer) term(word string) string {
	a.mu.RLock()
	t, ok := a.stems[word]
	a.mu.RUnlock()
	if ok {
		return t
	}
	if len(word) > maxTokenLen {
		return ""
	}
	var buf [maxTokenLen * 2]byte
	lw := appendLower(buf[:0], word)
	switch {
	case len(lw) < 2 && !isDigit(lw[0]):
		return ""
	case english.IsStopWord(string(lw)):
		t = "" // cached: stop words are frequent and few
	case !stemmable(lw):
		// Words with digits (ids, versions, numbers) are not stemmed and
		// mostly unique: not caching them keeps the cache to real words.
		return string(lw)
	default:
		t = english.Stem(string(lw), false)
	}
	a.mu.Lock()
	if len(a.stems) < maxStemCache {
		a.stems[strings.Clone(word)] = t
	}
	a.mu.Unlock()
	return t
}

func stemmable(w []byte) bool {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return len(w) > 2
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// splitWords calls emit with each run of letters and digits of text, split
// again at camelCase boundaries: "parseHTTPResponse" gives "parse", "HTTP",
// "Response"; letters and digits stay together ("k8s", "oauth2").
func splitWords(text string, emit func(string)) {
	start := -1
	var prev, prev2 rune // the last two runes of the current word
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if !isWordRune(r) {
			if start >= 0 {
				emit(text[start:i])
				start = -1
			}
			i += size
			continue
		}
		switch {
		case start < 0:
			start = i
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			// fooBar: a hump starts a word
			emit(text[start:i])
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2):
			// HTTPResponse: the last capital starts the next word
			j := i - utf8.RuneLen(prev)
			emit(text[start:j])
			start = j
		}
		prev2, prev = prev, r
		if start == i {
			prev2 = 0
		}
		i += size
	}
	if start >= 0 {
		emit(text[start:])
	}
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// appendLower appends w lower-cased (ASCII fast path).
func appendLower(dst []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return append(dst, strings.ToLower(w)...)
		}
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// unsafeBytes views s as bytes without copying; the caller must not write.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
