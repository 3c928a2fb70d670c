package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign is the webhook-signature value of a message: "v1," and the base64
// of HMAC-SHA256(key, id + "." + timestamp + "." + body).
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyTolerance is how far a delivery's timestamp may be from the
// receiver's clock (the Standard Webhooks default).
const VerifyTolerance = 5 * time.Minute

// Verify checks a delivery's headers against its body the way a receiver
// does: the timestamp within VerifyTolerance of now, and one of the
// space-separated v1 signatures matching. For receivers written in Go and
// for tests; the registry only signs.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return errors.New("webhooks: missing webhook-id, webhook-timestamp or webhook-signature")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhooks: webhook-timestamp %q is not a number of seconds", ts)
	}
	if d := now.Sub(time.Unix(t, 0)); d > VerifyTolerance || d < -VerifyTolerance {
		return fmt.Errorf("webhooks: webhook-timestamp %d is %v from now", t, d.Round(time.Second))
	}
	want := Sign(key, id, t, body)
	for _, s := range strings.Fields(sigs) {
		if strings.HasPrefix(s, "v1,") && hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhooks: no matching signature")
}
