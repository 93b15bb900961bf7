package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

// schemaReplays is migration 3: every replay of a delivery, with the
// target's answer. Replays go when their delivery goes (ON DELETE CASCADE,
// through the index on delivery_id, so Delete and Prune stay fast). The
// secret a replay was re-signed with is not a column: it is never stored.
const schemaReplays = `
CREATE TABLE replays (
	id            INTEGER PRIMARY KEY,
	delivery_id   INTEGER NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
	sent_at       INTEGER NOT NULL,
	target        TEXT    NOT NULL,
	mode          TEXT    NOT NULL,
	status        INTEGER NOT NULL DEFAULT 0,
	latency_ns    INTEGER NOT NULL DEFAULT 0,
	error         TEXT    NOT NULL DEFAULT '',
	detail        TEXT    NOT NULL,
	response_body BLOB    NOT NULL
);
CREATE INDEX replays_by_delivery ON replays(delivery_id, id);
`

// replayDetail holds the result fields nobody filters on, as JSON.
type replayDetail struct {
	Sources           []int64            `json:"sources,omitempty"`
	Copy              int                `json:"copy,omitempty"`
	HookUUID          string             `json:"hook_uuid,omitempty"`
	Events            []string           `json:"events,omitempty"`
	BodySize          int                `json:"body_size"`
	StatusText        string             `json:"status_text,omitempty"`
	ResponseHeaders   []inspector.Header `json:"response_headers,omitempty"`
	ResponseTruncated bool               `json:"response_truncated,omitempty"`
}

// SaveReplay stores one replay with its delivery and returns its id
// (replay.Recorder).
func (db *DB) SaveReplay(ctx context.Context, r *replay.Result) (int64, error) {
	detail, err := json.Marshal(replayDetail{Sources: r.Sources, Copy: r.Copy, HookUUID: r.HookUUID, Events: r.Events,
		BodySize: r.BodySize, StatusText: r.StatusText, ResponseHeaders: r.ResponseHeaders, ResponseTruncated: r.ResponseTruncated})
	if err != nil {
		return 0, fmt.Errorf("store replay of delivery %d: %w", r.DeliveryID, err)
	}
	body := r.ResponseBody
	if body == nil {
		body = []byte{}
	}
	sent := r.SentAt
	if sent.IsZero() {
		sent = time.Now()
	}
	var id int64
	err = db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO replays(delivery_id, sent_at, target, mode, status, latency_ns, error, detail, response_body)
			VALUES (?,?,?,?,?,?,?,?,?)`, r.DeliveryID, nanos(sent), r.Target, string(r.Mode), r.Status, int64(r.Latency), r.Error, string(detail), body)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store replay of delivery %d: %w", r.DeliveryID, err)
	}
	return id, nil
}

// Replays returns the replays of a delivery, newest first, at most limit
// (limit <= 0 means 100) (replay.History).
func (db *DB) Replays(ctx context.Context, deliveryID int64, limit int) ([]*replay.Result, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT id, sent_at, target, mode, status, latency_ns, error, detail, response_body
		FROM replays WHERE delivery_id = ? ORDER BY id DESC LIMIT ?`, deliveryID, limit)
	if err != nil {
		return nil, fmt.Errorf("list replays of delivery %d: %w", deliveryID, err)
	}
	defer rows.Close()
	var out []*replay.Result
	for rows.Next() {
		r := &replay.Result{DeliveryID: deliveryID}
		var sent, latency int64
		var mode, detail string
		if err := rows.Scan(&r.ID, &sent, &r.Target, &mode, &r.Status, &latency, &r.Error, &detail, &r.ResponseBody); err != nil {
			return nil, fmt.Errorf("list replays of delivery %d: %w", deliveryID, err)
		}
		var dt replayDetail
		if err := json.Unmarshal([]byte(detail), &dt); err != nil {
			return nil, fmt.Errorf("replay %d: detail: %w", r.ID, err)
		}
		r.SentAt, r.Latency, r.Mode = fromNanos(sent), time.Duration(latency), replay.Mode(mode)
		r.Sources, r.Copy, r.HookUUID, r.Events, r.BodySize = dt.Sources, dt.Copy, dt.HookUUID, dt.Events, dt.BodySize
		r.StatusText, r.ResponseHeaders, r.ResponseTruncated = dt.StatusText, dt.ResponseHeaders, dt.ResponseTruncated
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list replays of delivery %d: %w", deliveryID, err)
	}
	return out, nil
}
