package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

// Why a request was answered 400 (the body could not be read) and how the
// receiver answered are kept with the delivery, on both insert paths, and
// come back from Get, List and Each.
func TestReadErrorAndAnswerKept(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	d := delivery(1, `{"a`)
	d.ReadError, d.Status = "http: unexpected EOF reading trailer", 400
	bad := insert(t, db, d)
	d = delivery(2, "{}")
	d.Answer, d.Status = "close", 0
	closed := insert(t, db, d)
	rec, err := db.Get(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Delivery.ReadError != "http: unexpected EOF reading trailer" || rec.Delivery.Status != 400 {
		t.Errorf("Get: read error %q, status %d", rec.Delivery.ReadError, rec.Delivery.Status)
	}
	rows, err := db.List(ctx, Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]Summary{}
	for _, s := range rows {
		byID[s.ID] = s
	}
	if byID[bad].ReadError == "" || byID[closed].Answer != "close" {
		t.Errorf("List: %+v", rows)
	}
	var answers []string
	if err := db.Each(ctx, Filter{}, func(r *inspector.Record) error {
		answers = append(answers, r.Delivery.Answer)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(answers, ",") != ",close" {
		t.Errorf("Each: answers %q", answers)
	}
}

// A body changed on disk after it was stored is served as read, flagged,
// never silently: Get, Each and the analysis' Unanalyzed all say so.
func TestBodyDigestCheckedOnRead(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	good := insert(t, db, delivery(1, `{"n":1}`))
	flipped := insert(t, db, delivery(2, `{"n":2}`))
	if _, err := db.SQL().ExecContext(ctx, `UPDATE bodies SET body = CAST('{"n":3}' AS BLOB) WHERE delivery_id = ?`, flipped); err != nil {
		t.Fatal(err)
	}
	rec, err := db.Get(ctx, good)
	if err != nil || rec.Delivery.Damaged != "" {
		t.Fatalf("intact body flagged: %q (%v)", rec.Delivery.Damaged, err)
	}
	rec, err = db.Get(ctx, flipped)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Delivery.Damaged, "no longer matches") || string(rec.Delivery.Body) != `{"n":3}` {
		t.Fatalf("changed body: damaged %q, body %q", rec.Delivery.Damaged, rec.Delivery.Body)
	}
	var flagged []int64
	if err := db.Each(ctx, Filter{}, func(r *inspector.Record) error {
		if r.Delivery.Damaged != "" {
			flagged = append(flagged, r.Delivery.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(flagged) != 1 || flagged[0] != flipped {
		t.Errorf("Each flagged %v, want [%d]", flagged, flipped)
	}
	ds, err := db.Unanalyzed(ctx, 0, 10)
	if err != nil || len(ds) != 2 || ds[1].Damaged == "" || ds[0].Damaged != "" {
		t.Errorf("Unanalyzed: %v, %+v", err, ds)
	}
	// A body stored before digests were kept is not flagged.
	if _, err := db.SQL().ExecContext(ctx, `UPDATE bodies SET digest = NULL WHERE delivery_id = ?`, flipped); err != nil {
		t.Fatal(err)
	}
	if rec, err := db.Get(ctx, flipped); err != nil || rec.Delivery.Damaged != "" {
		t.Errorf("body without a digest: damaged %q (%v)", rec.Delivery.Damaged, err)
	}
}
