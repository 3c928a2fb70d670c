package skilladd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// download GETs an archive source (src.URL, credentials in it sent as
// HTTP Basic authentication, never shown), at most MaxDownload bytes within
// GitTimeout; redirects are followed to http(s) only, at most 5.
func download(ctx context.Context, src Source, o *Options) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.gitTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", src.Shown, err)
	}
	client := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		switch {
		case len(via) >= 5:
			return errors.New("more than 5 redirects")
		case r.URL.Scheme != "https" && r.URL.Scheme != "http":
			return fmt.Errorf("a redirect to a %s:// URL is refused", r.URL.Scheme)
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("downloading %s: not done within %s (--git-timeout)", src.Shown, o.gitTimeout())
		}
		return nil, fmt.Errorf("downloading %s: %v", src.Shown, redactErr(err, src))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// A server's plain-text reason (the registry's downloads say what
		// was wrong) is worth showing; anything else is cut short.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		why := ""
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") && utf8.Valid(b) {
			why = ": " + strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("downloading %s: %s%s", src.Shown, resp.Status, why)
	}
	max := o.maxDownload()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("downloading %s: %v", src.Shown, redactErr(err, src))
	case int64(len(b)) > max:
		return nil, fmt.Errorf("downloading %s: over %d bytes (--max-download)", src.Shown, max)
	}
	return b, nil
}

// redactErr keeps the URL with its credentials out of an error of the
// HTTP client (it quotes the URL it was given).
func redactErr(err error, src Source) string {
	return strings.ReplaceAll(err.Error(), src.URL, src.Shown)
}
