package remote

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Both model clients send this request and read failures through here:
// the key travels only as a bearer token and never comes back in a
// message, even cut in half.
func TestPostAndReadFailure(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
			t.Errorf("request %s %v", r.Method, r.Header)
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down, `+key+` is over its quota"}}`)
	}))
	defer srv.Close()
	req, err := NewPost(t.Context(), srv.URL, key, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer Drain(resp.Body, 1<<10)
	f := ReadFailure(resp, key, 1<<10, 30)
	if f.Status != 429 || !f.HasRetryAfter || f.RetryAfter != 7*time.Second {
		t.Fatalf("failure %+v", f)
	}
	if strings.Contains(f.Message, key[:10]) || !strings.HasPrefix(f.Message, "slow down, ") || len(f.Message) > 30 {
		t.Fatalf("message %q", f.Message)
	}
}
