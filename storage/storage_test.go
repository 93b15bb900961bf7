package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "sub", "hookscope.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

func delivery(i int, body string) *inspector.Delivery {
	return &inspector.Delivery{
		ReceivedAt: t0.Add(time.Duration(i) * time.Second),
		Method:     "POST",
		Path:       "/webhooks",
		Headers: []inspector.Header{
			{Name: "Host", Value: "127.0.0.1:8787"},
			{Name: "X-Service-Signature", Value: "ab"},
		},
		Body:       []byte(body),
		BodyLength: int64(len(body)),
		RemoteAddr: "127.0.0.1:5000",
		Status:     200,
	}
}

// event is a compact description of an event row for test analyses.
type event struct {
	uuid, typ, subject string
	dup, div, ooo      bool
	problems           int
	gen                time.Time
}

func analysis(id int64, sig inspector.SignatureStatus, hook string, evs ...event) *inspector.Analysis {
	a := &inspector.Analysis{
		DeliveryID: id,
		Signature:  inspector.SignatureResult{Status: sig, SecretIndex: -1},
		HookUUID:   hook,
		AnalyzedAt: t0,
	}
	for i, e := range evs {
		ea := inspector.EventAnalysis{
			Index: i, UUID: e.uuid, Type: e.typ, Subject: e.subject, Hash: "h-" + e.uuid,
			Duplicate: e.dup, Divergent: e.div, OutOfOrder: e.ooo, Summary: e.typ + " summary " + e.uuid,
			GeneratedAt: e.gen, GeneratedRaw: e.gen.Format(time.RFC3339), Copies: 1,
		}
		for range e.problems {
			ea.Problems = append(ea.Problems, catalog.Problem{Severity: catalog.SeverityWarning, Path: "payload", Message: "odd"})
		}
		a.Events = append(a.Events, ea)
	}
	return a
}

func insert(t *testing.T, db *DB, d *inspector.Delivery) int64 {
	t.Helper()
	id, err := db.InsertDelivery(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func save(t *testing.T, db *DB, a *inspector.Analysis) {
	t.Helper()
	if err := db.SaveAnalysis(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripByteExact(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	body := []byte("{\"a\":\"\xff\xfe\x00nul\x00\"}\x00\x80 tail")
	d := &inspector.Delivery{
		ReceivedAt: t0,
		Method:     "POST",
		Path:       "/webhooks/\xffodd",
		Query:      "a=1&b=%20",
		Headers: []inspector.Header{
			{Name: "x-lower", Value: "1"},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-UPPER", Value: "caf\xe9 latin-1"},
			{Name: "x-lower", Value: "2"},
			{Name: "X-\xfeName", Value: "<&>"},
		},
		HeadersReconstructed: true,
		Body:                 body,
		BodyLength:           int64(len(body)) + 5,
		RemoteAddr:           "[::1]:4242",
		Status:               413,
		Rejected:             true,
		Truncated:            true,
		Source:               "import",
	}
	id := insert(t, db, d)
	rec, err := db.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Delivery
	want := *d
	want.ID = id
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("body = %q, want %q", got.Body, body)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivery round trip:\n got %#v\nwant %#v", *got, want)
	}
	if rec.Analysis != nil {
		t.Fatalf("analysis of an unanalyzed delivery = %+v, want nil", rec.Analysis)
	}

	// Empty body and no headers come back empty, not nil-vs-empty confused.
	id2 := insert(t, db, &inspector.Delivery{ReceivedAt: t0, Method: "GET", Path: "/"})
	rec2, err := db.Get(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec2.Delivery.Body) != 0 || len(rec2.Delivery.Headers) != 0 || rec2.Delivery.Source != "receiver" {
		t.Fatalf("empty delivery = %+v", rec2.Delivery)
	}
}

func TestGetNotFound(t *testing.T) {
	db := openTemp(t)
	_, err := db.Get(context.Background(), 42)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(42) error = %v, want ErrNotFound", err)
	}
	err = db.SaveAnalysis(context.Background(), analysis(42, inspector.SignatureValid, ""))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("SaveAnalysis(42) error = %v, want ErrNotFound", err)
	}
	err = db.UpdateSignature(context.Background(), 42, inspector.SignatureResult{Status: inspector.SignatureValid})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("UpdateSignature(42) error = %v, want ErrNotFound", err)
	}
}

func TestGroupCommitConcurrent(t *testing.T) {
	db := openTemp(t)
	const n = 200
	ids := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id, err := db.InsertDelivery(context.Background(), delivery(i, fmt.Sprintf(`{"n":%d}`, i)))
			if err != nil {
				errs <- err
				return
			}
			ids[i] = id
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, id := range ids {
		if id <= 0 || seen[id] {
			t.Fatalf("inserter %d got id %d (duplicate or invalid)", i, id)
		}
		seen[id] = true
		rec, err := db.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"n":%d}`, i); string(rec.Delivery.Body) != want {
			t.Fatalf("id %d body %q, want %q", id, rec.Delivery.Body, want)
		}
	}
	if c, err := db.Count(context.Background(), Filter{}); err != nil || c != n {
		t.Fatalf("Count = %d, %v; want %d", c, err, n)
	}
}

func TestInsertAfterClose(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertDelivery(context.Background(), delivery(0, "{}")); err == nil {
		t.Fatal("insert after Close succeeded")
	}
}

// fixture stores a small varied set of deliveries and returns their ids in
// insertion order.
func fixture(t *testing.T, db *DB) []int64 {
	t.Helper()
	var ids []int64
	add := func(path, body string, a func(id int64) *inspector.Analysis) {
		d := delivery(len(ids), body)
		d.Path = path
		id := insert(t, db, d)
		ids = append(ids, id)
		if a != nil {
			save(t, db, a(id))
		}
	}
	gen := t0
	// 0: valid media.created
	add("/webhooks", `{"hook":{"uuid":"h1"},"events":[{"uuid":"e1","type":"media.created","payload":{"media":{"name":"Kitten video"}}}]}`,
		func(id int64) *inspector.Analysis {
			return analysis(id, inspector.SignatureValid, "h1", event{uuid: "e1", typ: "media.created", subject: "media:m1", gen: gen})
		})
	// 1: invalid, batched media.updated + viewing_session.play
	add("/webhooks", `{"hook":{"uuid":"h2"},"events":[{"uuid":"e2"},{"uuid":"e3"}],"note":"zebra crossing"}`,
		func(id int64) *inspector.Analysis {
			return analysis(id, inspector.SignatureInvalid, "h2",
				event{uuid: "e2", typ: "media.updated", subject: "media:m1", gen: gen.Add(2 * time.Second)},
				event{uuid: "e3", typ: "viewing_session.play", subject: "viewing_session:v1", gen: gen.Add(time.Second), problems: 2})
		})
	// 2: re-send of h1, duplicate e1 (same content), other path
	add("/other", `{"hook":{"uuid":"h1"},"events":[{"uuid":"e1","type":"media.created"}]}`,
		func(id int64) *inspector.Analysis {
			a := analysis(id, inspector.SignatureValid, "h1", event{uuid: "e1", typ: "media.created", subject: "media:m1", dup: true, gen: gen})
			a.Resend = true
			return a
		})
	// 3: divergent copy of e2, out of order
	add("/webhooks", `{"hook":{"uuid":"h3"},"events":[{"uuid":"e2","type":"media.updated","payload":{}}]}`,
		func(id int64) *inspector.Analysis {
			return analysis(id, inspector.SignatureMissing, "h3",
				event{uuid: "e2", typ: "media.updated", subject: "media:m1", dup: true, div: true, ooo: true, gen: gen.Add(time.Second)})
		})
	// 4: not JSON
	add("/webhooks", `not json at all`, func(id int64) *inspector.Analysis {
		a := analysis(id, inspector.SignatureUnverified, "")
		a.Error = &inspector.DecodeError{Reason: "invalid character 'o' in literal null", Offset: 1}
		return a
	})
	// 5: not analyzed yet
	add("/webhooks", `{"pending":"walrus"}`, nil)
	return ids
}

func listIDs(t *testing.T, db *DB, f Filter, limit int) []int64 {
	t.Helper()
	rows, err := db.List(context.Background(), f, limit)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	var out []int64
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func TestFilters(t *testing.T) {
	db := openTemp(t)
	ids := fixture(t, db)
	pick := func(ix ...int) []int64 {
		var out []int64
		for i := len(ix) - 1; i >= 0; i-- {
			out = append(out, ids[ix[i]])
		}
		return out
	}
	tests := []struct {
		name string
		f    Filter
		want []int64 // newest first
	}{
		{"all", Filter{}, pick(0, 1, 2, 3, 4, 5)},
		{"type", Filter{Types: []string{"media.created"}}, pick(0, 2)},
		{"types any", Filter{Types: []string{"viewing_session.play", "media.updated", "media.updated"}}, pick(1, 3)},
		{"type none", Filter{Types: []string{"live_event.registration"}}, nil},
		{"signature", Filter{Signatures: []inspector.SignatureStatus{inspector.SignatureInvalid}}, pick(1)},
		{"signatures any", Filter{Signatures: []inspector.SignatureStatus{inspector.SignatureValid, inspector.SignatureMissing}}, pick(0, 2, 3)},
		{"duplicates", Filter{DuplicatesOnly: true}, pick(2, 3)},
		{"divergent", Filter{DivergentOnly: true}, pick(3)},
		{"problems", Filter{ProblemsOnly: true}, pick(1, 4)},
		{"path", Filter{Path: "/other"}, pick(2)},
		{"text body", Filter{Text: "kitten"}, pick(0)},
		{"text two words", Filter{Text: "Zebra crossing"}, pick(1)},
		{"text summary", Filter{Text: "viewing_session.play"}, pick(1)},
		{"text decode error", Filter{Text: "invalid character"}, pick(4)},
		{"text unanalyzed", Filter{Text: "walrus"}, pick(5)},
		{"text no match", Filter{Text: "giraffe"}, nil},
		{"text punctuation only", Filter{Text: "{"}, pick(0, 1, 2, 3, 5)},
		{"since", Filter{Since: t0.Add(3 * time.Second)}, pick(3, 4, 5)},
		{"ids", Filter{IDs: []int64{ids[1], ids[4], 9999}}, pick(1, 4)},
		{"before", Filter{BeforeID: ids[2]}, pick(0, 1)},
		{"type and signature", Filter{Types: []string{"media.created", "media.updated"}, Signatures: []inspector.SignatureStatus{inspector.SignatureValid}}, pick(0, 2)},
		{"duplicates and path", Filter{DuplicatesOnly: true, Path: "/webhooks"}, pick(3)},
		{"text and type", Filter{Text: "e1", Types: []string{"media.created"}}, pick(0, 2)},
		{"problems and since", Filter{ProblemsOnly: true, Since: t0.Add(2 * time.Second)}, pick(4)},
		{"ids and divergent", Filter{IDs: ids, DivergentOnly: true}, pick(3)},
		{"since and before", Filter{Since: t0.Add(time.Second), BeforeID: ids[3]}, pick(1, 2)},
		{"types and before", Filter{Types: []string{"media.created", "media.updated"}, BeforeID: ids[2]}, pick(0, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listIDs(t, db, tt.f, 50); !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
			n, err := db.Count(context.Background(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(tt.want)) {
				t.Errorf("Count = %d, want %d", n, len(tt.want))
			}
			// Every filter set must be able to drive and give the same answer.
			for drv, set := range map[driver]bool{
				driveIDs: len(tt.f.IDs) > 0, driveText: ftsQuery(tt.f.Text) != "", driveDivergent: tt.f.DivergentOnly,
				driveProblems: tt.f.ProblemsOnly, driveDuplicates: tt.f.DuplicatesOnly, driveTypes: len(tt.f.Types) > 0,
				driveSignatures: len(tt.f.Signatures) > 0, drivePath: tt.f.Path != "", driveSince: !tt.f.Since.IsZero(), driveAll: true,
			} {
				if !set {
					continue
				}
				q := idQueryDriven(tt.f, drv, newestFirst, 0, 50)
				rows, err := db.an.Query(q.b.String(), q.args...)
				if err != nil {
					t.Fatalf("driver %d: %v", drv, err)
				}
				got, err := scanIDs(rows)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("driven by %d: %v, want %v", drv, got, tt.want)
				}
			}
			var each []int64
			if err := db.Each(context.Background(), tt.f, func(r *inspector.Record) error {
				each = append(each, r.Delivery.ID)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Reverse(each)
			if !slices.Equal(each, tt.want) {
				t.Errorf("Each = %v (reversed), want %v", each, tt.want)
			}
		})
	}
}

func TestSummaryFields(t *testing.T) {
	db := openTemp(t)
	ids := fixture(t, db)
	rows, err := db.List(context.Background(), Filter{IDs: []int64{ids[1], ids[3], ids[4], ids[5]}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]Summary{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	s := byID[ids[1]]
	if !s.Analyzed || s.Signature != inspector.SignatureInvalid || s.HookUUID != "h2" || s.EventCount != 2 ||
		s.FirstType != "media.updated" || s.FirstSummary != "media.updated summary e2" || s.Problems != 2 ||
		s.Method != "POST" || s.Path != "/webhooks" || s.Status != 200 || !s.ReceivedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("summary 1 = %+v", s)
	}
	if s := byID[ids[3]]; s.Duplicates != 1 || !s.Divergent || !s.OutOfOrder {
		t.Errorf("summary 3 = %+v", s)
	}
	if s := byID[ids[4]]; s.DecodeError == "" || s.HookUUID != "" {
		t.Errorf("summary 4 = %+v", s)
	}
	if s := byID[ids[5]]; s.Analyzed || s.Signature != "" || s.BodyLength != int64(len(`{"pending":"walrus"}`)) {
		t.Errorf("summary 5 = %+v", s)
	}
}

func TestPagingBeforeID(t *testing.T) {
	db := openTemp(t)
	var all []int64
	for i := range 23 {
		id := insert(t, db, delivery(i, "{}"))
		a := analysis(id, inspector.SignatureValid, "", event{uuid: fmt.Sprint("u", i), typ: []string{"media.ready", "media.failed"}[i%2]})
		save(t, db, a)
		all = append(all, id)
	}
	slices.Reverse(all)
	for _, f := range []Filter{{}, {Types: []string{"media.ready", "media.failed"}}, {Signatures: []inspector.SignatureStatus{"valid", "invalid"}}} {
		var got []int64
		for {
			page := listIDs(t, db, f, 5)
			if len(page) == 0 {
				break
			}
			if len(page) > 5 {
				t.Fatalf("page of %d rows", len(page))
			}
			got = append(got, page...)
			f.BeforeID = page[len(page)-1]
		}
		if !slices.Equal(got, all) {
			t.Errorf("paged %v\nwant %v", got, all)
		}
	}
}

func TestLedgerLookups(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	if l, err := db.Ledger(ctx, []string{"h1"}, []string{"e1"}, []string{"media:m1"}); err != nil || len(l.Hooks)+len(l.Events)+len(l.Subjects) > 0 {
		t.Fatalf("Ledger on an empty store = %+v, %v", l, err)
	}
	ids := fixture(t, db)

	l, err := db.Ledger(ctx, []string{"h1", "nope", ""}, []string{"e2", "none"}, []string{"media:m1", "media:none"})
	if err != nil {
		t.Fatal(err)
	}
	c, found := l.Events["e2"]
	if !found || c.Copies != 2 || c.First.DeliveryID != ids[1] || c.First.Hash != "h-e2" || !c.First.ReceivedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("Ledger events[e2] = %+v, %v", c, found)
	}
	if id, found := l.Hooks["h1"]; !found || id != ids[0] {
		t.Fatalf("Ledger hooks[h1] = %d, %v", id, found)
	}
	se, found := l.Subjects["media:m1"]
	if !found || se.UUID != "e2" || !se.GeneratedAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("Ledger subjects[media:m1] = %+v, %v", se, found)
	}
	if len(l.Hooks) != 1 || len(l.Events) != 1 || len(l.Subjects) != 1 {
		t.Fatalf("Ledger answered for keys never seen: %+v", l)
	}

	// The first copy is the lowest delivery, then the lowest index, even
	// when the keys take more than one statement.
	dup := &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: []byte("{}"), BodyLength: 2, ReceivedAt: t0}
	did, err := db.InsertDelivery(ctx, dup)
	if err != nil {
		t.Fatal(err)
	}
	a := &inspector.Analysis{DeliveryID: did, Events: []inspector.EventAnalysis{
		{Index: 0, UUID: "twice", Type: "media.created", Hash: "first"},
		{Index: 1, UUID: "twice", Type: "media.created", Hash: "second"},
	}}
	if err := db.SaveAnalysis(ctx, a); err != nil {
		t.Fatal(err)
	}
	many := []string{"twice"}
	for i := range 150 {
		many = append(many, fmt.Sprintf("absent-%d", i))
	}
	if l, err = db.Ledger(ctx, nil, many, nil); err != nil {
		t.Fatal(err)
	}
	if c := l.Events["twice"]; c.First.DeliveryID != did || c.First.Hash != "first" || c.Copies != 2 || len(l.Events) != 1 {
		t.Fatalf("Ledger events = %+v", l.Events)
	}

	// The latest event about a subject is the first stored of equal
	// times (as the inspector's pending ledger has it), across
	// deliveries and within one.
	var ties []*inspector.Analysis
	for _, uuids := range [][]string{{"tie-1", "tie-2"}, {"tie-3"}} {
		var evs []event
		for _, u := range uuids {
			evs = append(evs, event{uuid: u, typ: "media.updated", subject: "media:tie", gen: t0.Add(time.Hour)})
		}
		ties = append(ties, analysis(insert(t, db, delivery(9, "{}")), inspector.SignatureValid, "", evs...))
	}
	latest := func() string {
		t.Helper()
		l, err := db.Ledger(ctx, nil, nil, []string{"media:tie", "media:tie"})
		if err != nil || len(l.Subjects) > 1 {
			t.Fatalf("Ledger subjects = %+v, %v", l.Subjects, err)
		}
		return l.Subjects["media:tie"].UUID
	}
	save(t, db, ties[1])
	save(t, db, ties[0]) // stored later, but the lower delivery
	save(t, db, ties[0]) // an analysis replaced keeps its place
	if got := latest(); got != "tie-1" {
		t.Fatalf("latest of equal times = %q, want tie-1", got)
	}
	// Deleting the latest event forgets the subject (analysisLayout).
	if err := db.Delete(ctx, ties[0].DeliveryID); err != nil {
		t.Fatal(err)
	}
	if got := latest(); got != "" {
		t.Fatalf("latest after its delivery was deleted = %q, want the subject forgotten", got)
	}

	refs, err := db.EventCopies(ctx, "e2")
	if err != nil {
		t.Fatal(err)
	}
	want := []EventRef{
		{DeliveryID: ids[1], Index: 0, ReceivedAt: t0.Add(time.Second), Hash: "h-e2"},
		{DeliveryID: ids[3], Index: 0, ReceivedAt: t0.Add(3 * time.Second), Hash: "h-e2", Duplicate: true, Divergent: true},
	}
	if !reflect.DeepEqual(refs, want) {
		t.Fatalf("EventCopies(e2) = %+v\nwant %+v", refs, want)
	}

	un, err := db.Unanalyzed(ctx, 0, 10)
	if err != nil || len(un) != 1 || un[0].ID != ids[5] || string(un[0].Body) != `{"pending":"walrus"}` {
		t.Fatalf("Unanalyzed = %+v, %v", un, err)
	}
	if un, err := db.Unanalyzed(ctx, ids[5], 10); err != nil || len(un) != 0 {
		t.Fatalf("Unanalyzed after last = %+v, %v", un, err)
	}
}

func TestStats(t *testing.T) {
	db := openTemp(t)
	fixture(t, db)
	s, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Deliveries: 6, Events: 5, InvalidSignatures: 1, Duplicates: 2, Divergent: 1}
	if s != want {
		t.Fatalf("Stats = %+v, want %+v", s, want)
	}
}

func TestSaveAnalysisReplaces(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	body := `{"hook":{"uuid":"h"},"events":[{"uuid":"a","type":"media.ready"},{"uuid":"b","type":"media.failed"}]}`
	id := insert(t, db, delivery(0, body))
	gen := t0.Add(-time.Hour)
	first := analysis(id, inspector.SignatureInvalid, "h",
		event{uuid: "a", typ: "media.ready", subject: "media:x", gen: gen},
		event{uuid: "oldonly", typ: "media.failed", dup: true, div: true})
	save(t, db, first)
	rec, err := db.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Analysis == nil || len(rec.Analysis.Events) != 2 {
		t.Fatalf("analysis = %+v", rec.Analysis)
	}
	if ev := rec.Analysis.Events[0]; !ev.GeneratedAt.Equal(gen) || string(ev.Raw) != `{"uuid":"a","type":"media.ready"}` {
		t.Fatalf("event 0 generated_at %v raw %s", ev.GeneratedAt, ev.Raw)
	}

	second := analysis(id, inspector.SignatureValid, "h", event{uuid: "c", typ: "media.deleted"})
	second.Signature.SecretIndex = 1
	save(t, db, second)
	rec, err = db.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if a := rec.Analysis; a.Signature.Status != inspector.SignatureValid || a.Signature.SecretIndex != 1 || len(a.Events) != 1 || a.Events[0].UUID != "c" {
		t.Fatalf("replaced analysis = %+v", a)
	}
	if refs, _ := db.EventCopies(ctx, "a"); len(refs) != 0 {
		t.Fatalf("old event rows survive: %+v", refs)
	}
	if got := listIDs(t, db, Filter{Types: []string{"media.ready"}}, 10); len(got) != 0 {
		t.Fatalf("old type still matches: %v", got)
	}
	if got := listIDs(t, db, Filter{Types: []string{"media.deleted"}}, 10); !slices.Equal(got, []int64{id}) {
		t.Fatalf("new type matches %v", got)
	}
	if got := listIDs(t, db, Filter{Text: "media.deleted summary"}, 10); !slices.Equal(got, []int64{id}) {
		t.Fatalf("new summary search = %v", got)
	}
	if got := listIDs(t, db, Filter{Text: "oldonly"}, 10); len(got) != 0 {
		t.Fatalf("old summary still found: %v", got)
	}
	s, _ := db.Stats(ctx)
	if want := (Stats{Deliveries: 1, Events: 1}); s != want {
		t.Fatalf("Stats after replace = %+v, want %+v", s, want)
	}
}

func TestUpdateSignature(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	id := insert(t, db, delivery(0, "{}"))
	pending := insert(t, db, delivery(1, "{}"))
	save(t, db, analysis(id, inspector.SignatureInvalid, "", event{uuid: "x", typ: "media.ready"}))
	r := inspector.SignatureResult{Status: inspector.SignatureValid, SecretIndex: 2, Received: "ab", Expected: []string{"cd", "ef", "ab"}}
	if err := db.UpdateSignature(ctx, id, r); err != nil {
		t.Fatal(err)
	}
	rec, err := db.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Analysis.Signature, r) || len(rec.Analysis.Events) != 1 {
		t.Fatalf("analysis after UpdateSignature = %+v", rec.Analysis)
	}
	if got := listIDs(t, db, Filter{Signatures: []inspector.SignatureStatus{"valid"}}, 10); !slices.Equal(got, []int64{id}) {
		t.Fatalf("valid filter = %v", got)
	}
	if s, _ := db.Stats(ctx); s.InvalidSignatures != 0 {
		t.Fatalf("invalid counter = %d after fixing", s.InvalidSignatures)
	}
	if err := db.UpdateSignature(ctx, pending, r); err != nil {
		t.Fatal(err)
	}
	if rec, _ := db.Get(ctx, pending); rec.Analysis != nil {
		t.Fatal("UpdateSignature invented an analysis")
	}
}

func TestDelete(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	ids := fixture(t, db)
	if err := db.Delete(ctx, ids[1], ids[3], 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ctx, ids[1]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted delivery still there: %v", err)
	}
	if refs, _ := db.EventCopies(ctx, "e2"); len(refs) != 0 {
		t.Fatalf("events of deleted deliveries survive: %+v", refs)
	}
	if got := listIDs(t, db, Filter{Text: "zebra"}, 10); len(got) != 0 {
		t.Fatalf("search finds deleted delivery: %v", got)
	}
	if got := listIDs(t, db, Filter{}, 10); !slices.Equal(got, []int64{ids[5], ids[4], ids[2], ids[0]}) {
		t.Fatalf("remaining = %v", got)
	}
	s, _ := db.Stats(ctx)
	if want := (Stats{Deliveries: 4, Events: 2, Duplicates: 1}); s != want {
		t.Fatalf("Stats after delete = %+v, want %+v", s, want)
	}
	if err := db.Delete(ctx); err != nil {
		t.Fatalf("Delete() with no ids: %v", err)
	}
}

func TestPrune(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	// Inserted concurrently so group commit keeps the test fast.
	ids := make([]int64, 600) // more than deleteChunk: prune works in several transactions
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := db.InsertDelivery(ctx, delivery(i, "{}"))
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	slices.Sort(ids)
	if n, err := db.Prune(ctx, 0); err != nil || n != 0 {
		t.Fatalf("Prune(0) = %d, %v; want no cap", n, err)
	}
	if n, err := db.Prune(ctx, 5000); err != nil || n != 0 {
		t.Fatalf("Prune(5000) = %d, %v", n, err)
	}
	n, err := db.Prune(ctx, 100)
	if err != nil || n != 500 {
		t.Fatalf("Prune(100) = %d, %v; want 500", n, err)
	}
	got := listIDs(t, db, Filter{}, 1000)
	if len(got) != 100 || got[0] != ids[len(ids)-1] || got[99] != ids[500] {
		t.Fatalf("after prune: %d rows, newest %d oldest %d", len(got), got[0], got[len(got)-1])
	}
	if c, _ := db.Count(ctx, Filter{}); c != 100 {
		t.Fatalf("Count after prune = %d", c)
	}
}

func TestValues(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	if _, ok, err := db.Value(ctx, "secrets"); err != nil || ok {
		t.Fatalf("Value on empty store: ok=%v err=%v", ok, err)
	}
	for _, v := range [][]byte{[]byte("one"), {0, 0xff}, {}} {
		if err := db.SetValue(ctx, "secrets", v); err != nil {
			t.Fatal(err)
		}
		got, ok, err := db.Value(ctx, "secrets")
		if err != nil || !ok || !bytes.Equal(got, v) {
			t.Fatalf("Value = %q, %v, %v; want %q", got, ok, err, v)
		}
	}
}

func TestFileMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store", "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	insert(t, db, delivery(0, "{}"))
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			if p != path && errors.Is(err, os.ErrNotExist) {
				continue
			}
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), mode)
		}
	}
	db.Close()
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("store folder mode: %v %v", st.Mode().Perm(), err)
	}
}

func schemaVersion(t *testing.T, db *DB) int {
	t.Helper()
	var v int
	if err := db.SQL().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReopenKeepsDataAndVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := insert(t, db, delivery(0, "kept"))
	version := schemaVersion(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := schemaVersion(t, db); v != version || v != migrations()[len(migrations())-1].version {
		t.Fatalf("schema version %d after reopen, was %d", v, version)
	}
	var steps int
	db.SQL().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&steps)
	if steps != len(migrations()) {
		t.Fatalf("%d migration rows, want %d (a step ran twice?)", steps, len(migrations()))
	}
	rec, err := db.Get(context.Background(), id)
	if err != nil || string(rec.Delivery.Body) != "kept" {
		t.Fatalf("after reopen: %v %v", rec, err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "newer than this Hookscope understands") {
		t.Fatalf("Open of a newer store: %v", err)
	}
}

func TestFTSQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"kitten", `"kitten"`},
		{"  media.updated  abc-123 ", `"media.updated" "abc-123"`},
		{`say "hi"`, `"say" """hi"""`},
		{"{ } :", ""},
		{"NOT OR AND", `"NOT" "OR" "AND"`},
	}
	for _, tt := range tests {
		if got := ftsQuery(tt.in); got != tt.want {
			t.Errorf("ftsQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// FTS syntax in user text must not become an SQL error.
	db := openTemp(t)
	fixture(t, db)
	for _, text := range []string{`"`, `NEAR(a b)`, `a*`, `-x`, `col:1`, `'`, `^`} {
		if _, err := db.List(context.Background(), Filter{Text: text}, 10); err != nil {
			t.Errorf("List(Text %q): %v", text, err)
		}
	}
}

// TestQueryPlans checks that every list filter walks an index: no full
// scan of a table, and no sort except of the few rows a UNION branch
// yields (the Since filter, a range, is the documented exception).
func TestQueryPlans(t *testing.T) {
	db := openTemp(t)
	sigs := []inspector.SignatureStatus{inspector.SignatureValid, inspector.SignatureInvalid}
	filters := []Filter{
		{BeforeID: 10},
		{Types: []string{"media.ready"}},
		{Types: []string{"media.ready", "media.failed"}},
		{Signatures: sigs[:1]},
		{Signatures: sigs},
		{DuplicatesOnly: true},
		{DivergentOnly: true},
		{ProblemsOnly: true},
		{Path: "/webhooks"},
		{Text: "kitten"},
		{IDs: []int64{1, 2}},
		{Types: []string{"media.ready"}, Signatures: sigs, Path: "/webhooks", BeforeID: 5},
		{Text: "kitten", DuplicatesOnly: true, Since: t0},
	}
	fullScan := map[string]bool{"SCAN d": true, "SCAN deliveries": true, "SCAN e": true, "SCAN events": true, "SCAN b": true, "SCAN bodies": true}
	for _, f := range filters {
		ids := idQuery(f, newestFirst, 0, 50)
		rows, err := db.an.Query(`EXPLAIN QUERY PLAN SELECT `+summaryColumns+` FROM deliveries WHERE id IN (`+ids.b.String()+`) ORDER BY id DESC`, ids.args...)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for i, line := range plan {
			if fullScan[line] && !(f.BeforeID > 0 && chooseDriver(f, "") == driveAll) {
				t.Errorf("%+v: full scan %q in plan %q", f, line, plan)
			}
			if strings.Contains(line, "TEMP B-TREE") && (i == 0 || !strings.HasPrefix(plan[i-1], "SCAN (subquery-")) {
				t.Errorf("%+v: sort of an unbounded walk in plan %q", f, plan)
			}
		}
	}
}

// Inserts run without a savepoint: one that fails half-way (its body row
// refused) must leave no delivery row behind, while the inserts batched
// with it commit.
func TestFailedInsertLeavesNothingBehind(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	if _, err := db.SQL().ExecContext(ctx, `CREATE TRIGGER refuse_body BEFORE INSERT ON bodies
		WHEN new.body = x'deadbeef' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			body := []byte(fmt.Sprintf(`{"n":%d}`, i))
			if i%10 == 3 {
				body = []byte{0xde, 0xad, 0xbe, 0xef}
			}
			_, errs[i] = db.InsertDelivery(ctx, &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body))})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 3) != (err != nil) {
			t.Errorf("insert %d: error %v", i, err)
		}
	}
	var rows, bodies int64
	if err := db.SQL().QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM deliveries), (SELECT COUNT(*) FROM bodies)`).Scan(&rows, &bodies); err != nil {
		t.Fatal(err)
	}
	st, err := db.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 36 || bodies != 36 || st.Deliveries != 36 {
		t.Fatalf("%d delivery rows, %d bodies, counter %d: want 36 of each", rows, bodies, st.Deliveries)
	}
}

// Retention never deletes what a forward route still owes: the keep
// count and the routes' cursors are read together (they were read in two
// queries, and rows arriving in between let it delete owed deliveries).
// A route nobody forwards any more (its lease expired) holds nothing back.
func TestPruneKeepsWhatARouteOwes(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	for i := range 3 {
		insert(t, db, delivery(i, "{}"))
	}
	if _, err := db.ClaimRoute(ctx, "r", "A", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		insert(t, db, delivery(i, "{}"))
	}
	if n, err := db.Prune(ctx, 5); err != nil || n != 3 {
		t.Fatalf("Prune(5) with deliveries 4-23 owed = %d, %v; want the 3 below the cursor", n, err)
	}
	if got := listIDs(t, db, Filter{}, 100); len(got) != 20 || got[19] != 4 {
		t.Fatalf("kept %v", got)
	}
	if err := db.RenewLeases(ctx, "A", -time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Prune(ctx, 5); err != nil || n != 15 {
		t.Fatalf("Prune(5) once the route's lease expired = %d, %v; want 15", n, err)
	}
}

// Two processes opening one new store at once (the window and `listen`)
// both succeed: the schema version is read inside the migration's write
// transaction (it was read before it, and the second process failed with
// "table already exists").
func TestFreshStoreOpenedTogether(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("fresh-%d.db", round))
		var wg sync.WaitGroup
		errs := make([]error, 6)
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				db, err := Open(path)
				if err == nil {
					_, err = db.InsertDelivery(context.Background(), delivery(i, "{}"))
					db.Close()
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, opener %d: %v", round, i, err)
			}
		}
	}
}
