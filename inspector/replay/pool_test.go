package replay

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// TestPoolReusesConnections: with a Pool, many exchanges to one app share
// one connection; without, each dials.
func TestPoolReusesConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		pool *Pool
		want func(conns int64) bool
	}{
		{"pool", &Pool{}, func(n int64) bool { return n == 1 }},
		{"no pool", nil, func(n int64) bool { return n == 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			s := &Sender{Pool: tc.pool}
			target, _ := url.Parse(srv.URL + "/hook")
			for i := range 20 {
				resp, _, err := s.Send(context.Background(), target, Request{HostIndex: -1, Headers: []inspector.Header{{Name: "Content-Length", Value: "2"}}, Body: []byte("{}")})
				if err != nil || resp.Status != 200 || string(resp.Body) != "ok" {
					t.Fatalf("exchange %d: %v %+v", i, err, resp)
				}
			}
			if tc.pool != nil {
				tc.pool.Close()
			}
			if n := conns.Load(); !tc.want(n) {
				t.Errorf("%d connections for 20 exchanges", n)
			}
		})
	}
}

// TestPoolSurvivesAppClosingIdleConnections: an app that closes idle
// connections (a short keep-alive timeout, a restart) costs no failed
// exchange.
func TestPoolSurvivesAppClosingIdleConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Start()
	defer srv.Close()
	s := &Sender{Pool: &Pool{}}
	defer s.Pool.Close()
	target, _ := url.Parse(srv.URL)
	for i := range 5 {
		resp, _, err := s.Send(context.Background(), target, Request{HostIndex: -1, Headers: []inspector.Header{{Name: "Content-Length", Value: "0"}}})
		if err != nil || resp.Status != 200 {
			t.Fatalf("exchange %d after an idle close: %v", i, err)
		}
		time.Sleep(60 * time.Millisecond)
	}
}
