package replay_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// TestReplayIntoHookscopesReceiver sends a stored delivery to Hookscope's
// own receiver: what it captures must be the original, header for header
// (Host's value aside), and a re-signed copy must verify with the new
// secret. Replays are recorded in the store with their delivery.
func TestReplayIntoHookscopesReceiver(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{[]byte("new-secret")}})
	srv, err := inspector.Serve("127.0.0.1:0", eng.Handler(), inspector.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		srv.Shutdown(c)
	}()

	g := simulate.New(8)
	m := g.Message(g.Event(catalog.TypeMediaTranscriptUpdated), g.Event(catalog.TypeViewingPercentWatched))
	body := m.Body()
	orig := &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)), Status: 200,
		Headers: append([]inspector.Header{{Name: "Host", Value: "abc.trycloudflare.com"}, {Name: "X-Forwarded-Proto", Value: "https"}}, m.Headers([]byte("old-secret"))...)}
	id, err := db.InsertDelivery(ctx, orig)
	if err != nil {
		t.Fatal(err)
	}
	orig.ID = id

	r := replay.New(db)
	url := "http://" + srv.Addr() + "/webhooks"
	for _, opts := range []replay.Options{{Target: url}, {Target: url, Secret: []byte("new-secret")}} {
		res, err := r.Replay(ctx, orig, opts)
		if err != nil || res.Status != 200 {
			t.Fatalf("replay: %v %+v", err, res)
		}
	}
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := db.Get(ctx, id+1)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]inspector.Header(nil), orig.Headers...)
	want[0].Value = srv.Addr()
	if !reflect.DeepEqual(raw.Delivery.Headers, want) || !bytes.Equal(raw.Delivery.Body, body) || raw.Delivery.HeadersReconstructed {
		t.Errorf("the receiver captured\n%v\nwant\n%v", raw.Delivery.Headers, want)
	}
	if raw.Analysis.Signature.Status != inspector.SignatureInvalid {
		t.Errorf("raw replay (old signature) verdict: %s", raw.Analysis.Signature.Status)
	}
	resigned, err := db.Get(ctx, id+2)
	if err != nil {
		t.Fatal(err)
	}
	if resigned.Analysis.Signature.Status != inspector.SignatureValid {
		t.Errorf("re-signed replay verdict: %s (%s)", resigned.Analysis.Signature.Status, resigned.Analysis.Signature.Reason)
	}
	reps, err := db.Replays(ctx, id, 0)
	if err != nil || len(reps) != 2 || reps[0].Mode != replay.ModeResigned || reps[1].Mode != replay.ModeRaw {
		t.Errorf("recorded: %v %+v", err, reps)
	}
}
