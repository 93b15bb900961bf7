package replay

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// BenchmarkReplayRaw measures one byte-exact replay to a loopback consumer,
// connection set-up included (every replay dials: the service does too).
func BenchmarkReplayRaw(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	g := simulate.New(1)
	d := captured(1, "k", g.Message(g.Event(catalog.TypeMediaLocalizationCreated)))
	r := New(nil)
	b.SetBytes(int64(len(d.Body)))
	b.ResetTimer()
	for b.Loop() {
		res, err := r.Replay(context.Background(), d, Options{Target: srv.URL})
		if err != nil || res.Status != 200 {
			b.Fatal(err, res.Error)
		}
	}
}

// BenchmarkCheckConsumer measures a whole consumer check (22 cases, 23
// requests) against a loopback consumer that answers at once.
func BenchmarkCheckConsumer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	r := New(nil)
	for b.Loop() {
		if _, err := r.CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("k"), Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
