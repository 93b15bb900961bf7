package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/rules"
)

// The store is where expressions find deliveries.
var _ rules.Source = (*DB)(nil)

// whereBatch is how many deliveries EachNarrowed loads per round trip.
const whereBatch = 500

// EachNarrowed calls fn with each delivery q's narrowing allows, in q's
// order (rules.Source). The narrowing's indexed parts drive the walk as
// Filter's do (types, signatures, a path, since, ids, duplicates, text,
// problems); the
// rest (until, id bounds, several paths, statuses, hook uuids) is checked
// on each batch of ids by primary key. Only what q.Needs is read: the
// small columns always (with the verdict, hook uuid and decode error as
// a partial analysis), events from the events table, bodies and headers,
// the analysis JSON for problems, the latest attempt per forward route.
func (db *DB) EachNarrowed(ctx context.Context, q rules.Query, fn func(*rules.Input) error) error {
	n := q.Narrowing
	if n.None {
		return nil
	}
	f := Filter{Types: n.Types, Since: n.Since, IDs: n.IDs, DuplicatesOnly: n.Duplicates, DivergentOnly: n.Divergent,
		Text: n.Text, ProblemsOnly: n.Problems}
	for _, s := range n.Signatures {
		f.Signatures = append(f.Signatures, inspector.SignatureStatus(s))
	}
	if len(n.Paths) == 1 {
		f.Path = n.Paths[0]
	}
	if len(n.HookUUIDs) > 0 && len(f.IDs) == 0 {
		// A hook uuid has a handful of deliveries: its index gives their
		// ids, which then drive the walk.
		ids, err := db.hookIDs(ctx, n.HookUUIDs)
		if err != nil {
			return fmt.Errorf("find deliveries: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		f.IDs = ids
	}
	ord := oldestFirst
	if q.NewestFirst {
		ord = newestFirst
	}
	if n.MaxID > 0 {
		f.BeforeID = n.MaxID + 1
	}
	after := max(n.MinID-1, 0)
	// The next batch loads (SQLite, on one core) while fn checks this
	// one (the expression, on the other): a walk of the whole store takes
	// about the longer of the two instead of their sum.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type loaded struct {
		ins []*rules.Input
		err error
	}
	batches := make(chan loaded, 1)
	go func() {
		defer close(batches)
		for {
			ids := idQuery(f, ord, after, whereBatch)
			batch, err := db.queryIDs(ctx, ids)
			var ins []*rules.Input
			if err == nil && len(batch) > 0 {
				ins, err = db.loadNarrowed(ctx, batch, n, q.Needs)
			}
			if q.NewestFirst {
				slices.Reverse(ins)
			}
			select {
			case batches <- loaded{ins, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(batch) < whereBatch {
				return
			}
			if q.NewestFirst {
				f.BeforeID = batch[len(batch)-1]
			} else {
				after = batch[len(batch)-1]
			}
		}
	}()
	for b := range batches {
		if b.err != nil {
			return fmt.Errorf("find deliveries: %w", b.err)
		}
		for _, in := range b.ins {
			if err := fn(in); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

func (db *DB) queryIDs(ctx context.Context, q *query) ([]int64, error) {
	rows, err := db.an.QueryContext(ctx, q.b.String(), q.args...)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows)
}

// hookIDs returns the ids of the deliveries that carried these hook uuids.
func (db *DB) hookIDs(ctx context.Context, hooks []string) ([]int64, error) {
	rows, err := db.an.QueryContext(ctx, `SELECT id FROM deliveries INDEXED BY deliveries_hook WHERE hook_uuid IN (`+placeholders(len(hooks))+`) ORDER BY id`, argsOf(hooks)...)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows)
}

// loadNarrowed loads the deliveries of ids (ascending) that pass the
// narrowing's unindexed parts, as far as needs say.
func (db *DB) loadNarrowed(ctx context.Context, ids []int64, n rules.Narrowing, needs rules.Needs) ([]*rules.Input, error) {
	q := &query{}
	q.add(`SELECT `+deliveryColumns+`, d.analyzed, d.signature, d.hook_uuid, d.resend, d.decode_error FROM deliveries d WHERE d.id IN (`+placeholders(len(ids))+`)`, argsOf(ids)...)
	if !n.Until.IsZero() {
		q.add(` AND d.received_at <= ?`, nanos(n.Until))
	}
	if len(n.Paths) > 1 {
		q.add(` AND d.path IN (`+placeholders(len(n.Paths))+`)`, argsOf(n.Paths)...)
	}
	if len(n.Statuses) > 0 {
		st := make([]any, len(n.Statuses))
		for i, s := range n.Statuses {
			st[i] = s
		}
		q.add(` AND d.status IN (`+placeholders(len(st))+`)`, st...)
	}
	if len(n.HookUUIDs) > 0 {
		q.add(` AND d.hook_uuid IN (`+placeholders(len(n.HookUUIDs))+`)`, argsOf(n.HookUUIDs)...)
	}
	q.add(` ORDER BY d.id`)
	rows, err := db.an.QueryContext(ctx, q.b.String(), q.args...)
	if err != nil {
		return nil, err
	}
	var out []*rules.Input
	byID := map[int64]*rules.Input{}
	var unanalyzed, kept []int64
	for rows.Next() {
		d := &inspector.Delivery{}
		dest, done := deliveryDest(d)
		var analyzed bool
		var sig string
		var hook, decodeErr sql.NullString
		var resend bool
		if err := rows.Scan(append(dest, &analyzed, &sig, &hook, &resend, &decodeErr)...); err != nil {
			rows.Close()
			return nil, err
		}
		done()
		rec := &inspector.Record{Delivery: d}
		if analyzed {
			rec.Analysis = &inspector.Analysis{DeliveryID: d.ID, Signature: inspector.SignatureResult{Status: inspector.SignatureStatus(sig)},
				HookUUID: hook.String, Resend: resend, Events: []inspector.EventAnalysis{}}
			if decodeErr.Valid {
				rec.Analysis.Error = &inspector.DecodeError{Reason: decodeErr.String, Offset: -1}
			}
		} else {
			unanalyzed = append(unanalyzed, d.ID)
		}
		in := &rules.Input{Record: rec}
		out = append(out, in)
		byID[d.ID] = in
		kept = append(kept, d.ID)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, err
	}
	rows.Close()
	if len(kept) == 0 {
		return nil, nil
	}
	// Headers for headers; bodies for payloads and for the deliveries not
	// analyzed yet whose events an expression reads (each column read
	// only when needed: a headers-only walk skips the bodies' pages).
	bodyIDs := kept
	if !needs.Body {
		bodyIDs = nil
		if needs.Events || needs.Problems {
			bodyIDs = unanalyzed
		}
	}
	if err := db.loadBodies(ctx, bodyIDs, byID, needs.Headers); err != nil {
		return nil, err
	}
	if needs.Headers && len(bodyIDs) < len(kept) {
		if err := db.loadHeaders(ctx, kept, byID); err != nil {
			return nil, err
		}
	}
	switch {
	case needs.Problems:
		err = db.loadAnalyses(ctx, kept, byID)
	case needs.Events:
		err = db.loadEvents(ctx, kept, byID)
	}
	if err != nil {
		return nil, err
	}
	// Events come without their raw JSON: an expression reading a
	// payload decodes the body once, only for the deliveries it reaches.
	if needs.Forward {
		if err := db.loadForward(ctx, kept, byID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadBodies reads the bodies of ids (with their headers when headers).
func (db *DB) loadBodies(ctx context.Context, ids []int64, byID map[int64]*rules.Input, headers bool) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.an.QueryContext(ctx, `SELECT delivery_id, headers, body FROM bodies WHERE delivery_id IN (`+placeholders(len(ids))+`)`, argsOf(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var hs string
		var body []byte
		if err := rows.Scan(&id, &hs, &body); err != nil {
			return err
		}
		d := byID[id].Record.Delivery
		d.Body = body
		if headers {
			if d.Headers, err = decodeHeaders(hs); err != nil {
				return fmt.Errorf("delivery %d: %w", id, err)
			}
		}
	}
	return rows.Err()
}

// loadHeaders reads the headers of ids without their bodies.
func (db *DB) loadHeaders(ctx context.Context, ids []int64, byID map[int64]*rules.Input) error {
	rows, err := db.an.QueryContext(ctx, `SELECT delivery_id, headers FROM bodies WHERE delivery_id IN (`+placeholders(len(ids))+`)`, argsOf(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var hs string
		if err := rows.Scan(&id, &hs); err != nil {
			return err
		}
		if byID[id].Record.Delivery.Headers, err = decodeHeaders(hs); err != nil {
			return fmt.Errorf("delivery %d: %w", id, err)
		}
	}
	return rows.Err()
}

// loadEvents fills the partial analyses' events from the events table.
func (db *DB) loadEvents(ctx context.Context, ids []int64, byID map[int64]*rules.Input) error {
	rows, err := db.an.QueryContext(ctx, `SELECT delivery_id, idx, uuid, type, account_id, generated_at, generated_raw, duplicate, divergent, summary
		FROM events WHERE delivery_id IN (`+placeholders(len(ids))+`) ORDER BY delivery_id, idx`, argsOf(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var e inspector.EventAnalysis
		var gen sql.NullInt64
		if err := rows.Scan(&id, &e.Index, &e.UUID, &e.Type, &e.AccountID, &gen, &e.GeneratedRaw, &e.Duplicate, &e.Divergent, &e.Summary); err != nil {
			return err
		}
		if gen.Valid {
			e.GeneratedAt = fromNanos(gen.Int64)
		}
		if a := byID[id].Record.Analysis; a != nil {
			a.Events = append(a.Events, e)
		}
	}
	return rows.Err()
}

// loadAnalyses replaces the partial analyses with the stored ones.
func (db *DB) loadAnalyses(ctx context.Context, ids []int64, byID map[int64]*rules.Input) error {
	rows, err := db.an.QueryContext(ctx, `SELECT a.delivery_id, a.analysis FROM analyses a JOIN deliveries d ON d.id = a.delivery_id AND d.analyzed = 1 WHERE a.delivery_id IN (`+placeholders(len(ids))+`)`, argsOf(ids)...)
	if err != nil {
		return err
	}
	var recs []*inspector.Record
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			rows.Close()
			return err
		}
		a := &inspector.Analysis{}
		if err := json.Unmarshal(blob, a); err != nil {
			rows.Close()
			return fmt.Errorf("delivery %d: decode analysis: %w", id, err)
		}
		rec := byID[id].Record
		rec.Analysis = a
		recs = append(recs, rec)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	return fillGeneratedAt(ctx, db.an, recs)
}

// loadForward sets each delivery's latest attempt per route.
func (db *DB) loadForward(ctx context.Context, ids []int64, byID map[int64]*rules.Input) error {
	// SQLite takes the bare columns of a max() aggregate from the row
	// holding the maximum: status and outcome are the latest attempt's.
	rows, err := db.an.QueryContext(ctx, `SELECT delivery_id, route, count(*), max(id), status, outcome, max(final)
		FROM forward_attempts WHERE delivery_id IN (`+placeholders(len(ids))+`) GROUP BY delivery_id, route ORDER BY delivery_id, route`, argsOf(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, last int64
		var r rules.RouteResult
		if err := rows.Scan(&id, &r.Route, &r.Attempts, &last, &r.Status, &r.Outcome, &r.Final); err != nil {
			return err
		}
		in := byID[id]
		in.Forward = append(in.Forward, r)
	}
	return rows.Err()
}

// The store counts the attempts answer rules' sequences go on from.
var _ rules.AttemptSource = (*DB)(nil)

// HookAttempts calls fn with each hook uuid of the deliveries received
// since since, and how many deliveries carried it (rules.AttemptSource).
func (db *DB) HookAttempts(ctx context.Context, since time.Time, fn func(hook string, n int) error) error {
	rows, err := db.an.QueryContext(ctx, `SELECT hook_uuid, count(*) FROM deliveries INDEXED BY deliveries_received
		WHERE received_at >= ? AND hook_uuid IS NOT NULL GROUP BY hook_uuid`, nanos(since))
	if err != nil {
		return fmt.Errorf("count attempts per message: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hook string
		var n int
		if err := rows.Scan(&hook, &n); err != nil {
			return fmt.Errorf("count attempts per message: %w", err)
		}
		if err := fn(hook, n); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EventTypes returns the event types of each of ids that was analyzed,
// in event order (a list row shows them all, not only the first).
func (db *DB) EventTypes(ctx context.Context, ids []int64) (map[int64][]string, error) {
	out := map[int64][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.an.QueryContext(ctx, `SELECT delivery_id, type FROM events WHERE delivery_id IN (`+placeholders(len(ids))+`) ORDER BY delivery_id, idx`, argsOf(ids)...)
	if err != nil {
		return nil, fmt.Errorf("read event types: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var t string
		if err := rows.Scan(&id, &t); err != nil {
			return nil, fmt.Errorf("read event types: %w", err)
		}
		out[id] = append(out[id], t)
	}
	return out, rows.Err()
}

// whereChunk is how many matching ids EachWhere reads back at a time.
const whereChunk = 500

// EachWhere calls fn with every whole record (body, headers, analysis)
// that f selects and e matches, oldest first: --where on export, replay
// and reverify. The expression is checked first (narrowed in SQL, see
// rules.Find), then the matching records are read back in chunks, so
// memory stays flat and no read is held while fn runs. A nil e is Each.
// The stats say how many deliveries the expression could not check.
func (db *DB) EachWhere(ctx context.Context, f Filter, e *rules.Expr, now time.Time, fn func(*inspector.Record) error) (rules.FindStats, error) {
	if e == nil {
		return rules.FindStats{}, db.Each(ctx, f, fn)
	}
	var ids []int64
	st, err := rules.Find(ctx, db, e, rules.FindOptions{Now: now}, func(in *rules.Input) error {
		if id := in.Record.Delivery.ID; len(f.IDs) == 0 || slices.Contains(f.IDs, id) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	for chunk := range slices.Chunk(ids, whereChunk) {
		g := f
		g.IDs = chunk
		if err := db.Each(ctx, g, fn); err != nil {
			return st, err
		}
	}
	return st, nil
}
