package health

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("%s %s: Content-Type %q", method, url, ct)
	}
	return resp.StatusCode, string(b)
}

// Over a real socket: liveness always answers, readiness follows the check.
func TestProbes(t *testing.T) {
	var reason atomic.Pointer[string]
	r := "catalog not loaded yet"
	reason.Store(&r)
	mux := http.NewServeMux()
	Mount(mux, func() error {
		if p := reason.Load(); p != nil {
			return errors.New(*p)
		}
		return nil
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if code, body := get(t, http.MethodGet, srv.URL+LivePath); code != 200 || body != "ok\n" {
		t.Errorf("healthz = %d %q", code, body)
	}
	if code, body := get(t, http.MethodGet, srv.URL+ReadyPath); code != 503 || body != "not ready: catalog not loaded yet\n" {
		t.Errorf("readyz before = %d %q", code, body)
	}
	reason.Store(nil)
	if code, body := get(t, http.MethodGet, srv.URL+ReadyPath); code != 200 || body != "ready\n" {
		t.Errorf("readyz after = %d %q", code, body)
	}
	if code, _ := get(t, http.MethodHead, srv.URL+ReadyPath); code != 200 {
		t.Errorf("HEAD readyz = %d", code)
	}
	if code, _ := get(t, http.MethodPost, srv.URL+LivePath); code != http.StatusMethodNotAllowed {
		t.Errorf("POST healthz = %d, want 405", code)
	}
}

func TestNilCheckIsReady(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux, nil)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ReadyPath, nil))
	if rec.Code != 200 || rec.Body.String() != "ready\n" {
		t.Errorf("readyz = %d %q", rec.Code, rec.Body.String())
	}
}

// All is ready only when every check is, and says why the first that is
// not is not (the registry: connected and loaded, then owning its ids).
func TestAllChecks(t *testing.T) {
	ok := func() error { return nil }
	held := func() error { return errors.New("other workers hold 1 of the registry's functions") }
	gone := func() error { return errors.New("not connected to the iii engine") }
	if err := All(ok, nil, ok)(); err != nil {
		t.Fatalf("All(ok, nil, ok) = %v", err)
	}
	if err := All(ok, held)(); err == nil || err.Error() != "other workers hold 1 of the registry's functions" {
		t.Fatalf("All(ok, held) = %v", err)
	}
	if err := All(gone, held)(); err == nil || err.Error() != "not connected to the iii engine" {
		t.Fatalf("All(gone, held) = %v; want the first reason", err)
	}
}
