package sandbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// BenchmarkAuthorizeAndExchange measures one whole flow in-process: four
// page requests of the browser plus the token exchange.
func BenchmarkAuthorizeAndExchange(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	app := DefaultApp()
	for b.Loop() {
		br := NewBrowser("manager@example.com", "manager")
		cb, err := br.Authorize(context.Background(), AuthorizeURL(ts.URL, app, nil))
		if err != nil {
			b.Fatal(err)
		}
		p := url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret}, "grant_type": {"authorization_code"},
			"code": {cb.Query().Get("code")}, "redirect_uri": {app.RedirectURI}}
		resp, err := http.Post(ts.URL+"/oauth/token?"+p.Encode(), "", nil)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("exchange: %v %v", err, resp)
		}
		resp.Body.Close()
	}
}

// BenchmarkMediaShow measures GET /v1/medias/<id> with a bearer header,
// handler only (no sockets).
func BenchmarkMediaShow(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	app := DefaultApp()
	cb, err := NewBrowser("manager@example.com", "manager").Authorize(context.Background(), AuthorizeURL(ts.URL, app, nil))
	if err != nil {
		b.Fatal(err)
	}
	p := url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret}, "grant_type": {"authorization_code"},
		"code": {cb.Query().Get("code")}, "redirect_uri": {app.RedirectURI}}
	resp, err := http.Post(ts.URL+"/oauth/token?"+p.Encode(), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	s.mu.Lock()
	var tok string
	for k := range s.access {
		tok = k
	}
	s.mu.Unlock()
	h := s.Handler()
	for b.Loop() {
		req := httptest.NewRequest("GET", "http://127.0.0.1:8790/v1/medias/k3j9x2m7pq", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
