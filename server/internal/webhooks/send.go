package webhooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// UserAgent names the registry in every delivery.
const UserAgent = "iii-skills-registry-webhooks/1"

func defaultTransport(concurrency int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   concurrency,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
}

func formatSeq(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// send makes one attempt: a POST of the delivery's body to the endpoint's
// configured URL, signed now. It reads at most MaxResponseBytes of the
// answer. A 2xx answer is success; anything else (a redirect included) is
// an error saying what came back.
func (d *Dispatcher) send(ctx context.Context, q *queue, del *Delivery) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.ep.URL, bytes.NewReader(del.Body))
	if err != nil {
		return 0, fmt.Errorf("build the request: %w", err)
	}
	ts := d.opts.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, del.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(q.key, del.ID, ts, del.Body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %w", q.ep.URL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.CopyN(io.Discard, resp.Body, d.opts.MaxResponseBytes-int64(len(head)))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, fmt.Errorf("POST %s: answered %s, a redirect to %q: not followed (deliveries go only to the configured URL; configure the new one)",
			q.ep.URL, resp.Status, printable(resp.Header.Get("Location"), 200))
	}
	msg := printable(string(head), 200)
	if msg != "" {
		msg = ": " + msg
	}
	return resp.StatusCode, fmt.Errorf("POST %s: answered %s%s", q.ep.URL, resp.Status, msg)
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and URL.
func unwrapURLError(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok && strings.HasPrefix(err.Error(), "Post ") {
		if inner := u.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// printable is s cut to max bytes with everything but printable text
// replaced: an answer's body is the receiver's, shown on a web page.
func printable(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		if !unicode.IsPrint(r) {
			r = ' '
		}
		if b.Len()+len(string(r)) > max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
