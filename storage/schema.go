package storage

// schemaDeliveries is migration 1: deliveries, their bodies, events, the
// full-text index, counters for Stats and the key/value table.
//
// Layout choices, each measured in docs/storage.md:
//   - deliveries holds only small columns (plus the analysis JSON, last) so
//     list pages, filter walks and counts touch few pages; the raw body and
//     the header block live in bodies, read only by Get, Each and Unanalyzed.
//   - every list filter has an index ending in the delivery id, so a
//     newest-first page is a backwards index walk that stops after one page;
//     the rare flags use partial indexes that hold only the matching ids.
//   - counters are kept by triggers in the same transaction as the rows they
//     count, so Stats reads five rows instead of scanning a million.
//   - search is a contentless FTS5 index (the text is already in bodies);
//     contentless_delete lets Delete, Prune and re-analysis remove entries.
const schemaDeliveries = `
CREATE TABLE deliveries (
	id                    INTEGER PRIMARY KEY,
	received_at           INTEGER NOT NULL,
	method                TEXT    NOT NULL,
	path                  TEXT    NOT NULL,
	query                 TEXT    NOT NULL DEFAULT '',
	headers_reconstructed INTEGER NOT NULL DEFAULT 0,
	body_length           INTEGER NOT NULL,
	remote_addr           TEXT    NOT NULL DEFAULT '',
	status                INTEGER NOT NULL DEFAULT 0,
	rejected              INTEGER NOT NULL DEFAULT 0,
	truncated             INTEGER NOT NULL DEFAULT 0,
	source                TEXT    NOT NULL DEFAULT 'receiver',
	analyzed              INTEGER NOT NULL DEFAULT 0,
	signature             TEXT    NOT NULL DEFAULT '',
	secret_index          INTEGER NOT NULL DEFAULT -1,
	hook_uuid             TEXT,
	resend                INTEGER NOT NULL DEFAULT 0,
	decode_error          TEXT,
	event_count           INTEGER NOT NULL DEFAULT 0,
	first_type            TEXT    NOT NULL DEFAULT '',
	first_summary         TEXT    NOT NULL DEFAULT '',
	duplicates            INTEGER NOT NULL DEFAULT 0,
	divergent             INTEGER NOT NULL DEFAULT 0,
	out_of_order          INTEGER NOT NULL DEFAULT 0,
	problem_count         INTEGER NOT NULL DEFAULT 0,
	analysis              BLOB
);
CREATE INDEX deliveries_signature  ON deliveries(signature, id);
CREATE INDEX deliveries_path       ON deliveries(path, id);
CREATE INDEX deliveries_received   ON deliveries(received_at);
CREATE INDEX deliveries_hook       ON deliveries(hook_uuid, id) WHERE hook_uuid IS NOT NULL;
CREATE INDEX deliveries_unanalyzed ON deliveries(id) WHERE analyzed = 0;
CREATE INDEX deliveries_duplicates ON deliveries(id) WHERE duplicates > 0 OR divergent = 1;
CREATE INDEX deliveries_divergent  ON deliveries(id) WHERE divergent = 1;
CREATE INDEX deliveries_problems   ON deliveries(id) WHERE problem_count > 0 OR decode_error IS NOT NULL;

CREATE TABLE bodies (
	delivery_id INTEGER PRIMARY KEY,
	headers     TEXT NOT NULL,
	body        BLOB NOT NULL
);

CREATE TABLE events (
	delivery_id   INTEGER NOT NULL,
	idx           INTEGER NOT NULL,
	uuid          TEXT    NOT NULL,
	type          TEXT    NOT NULL,
	account_id    TEXT    NOT NULL DEFAULT '',
	generated_at  INTEGER,
	generated_raw TEXT    NOT NULL DEFAULT '',
	subject       TEXT    NOT NULL DEFAULT '',
	hash          TEXT    NOT NULL DEFAULT '',
	duplicate     INTEGER NOT NULL DEFAULT 0,
	divergent     INTEGER NOT NULL DEFAULT 0,
	out_of_order  INTEGER NOT NULL DEFAULT 0,
	problem_count INTEGER NOT NULL DEFAULT 0,
	summary       TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (delivery_id, idx)
) WITHOUT ROWID;
CREATE INDEX events_uuid    ON events(uuid, delivery_id);
CREATE INDEX events_type    ON events(type, delivery_id);
CREATE INDEX events_subject ON events(subject, generated_at) WHERE subject <> '' AND generated_at IS NOT NULL;

CREATE VIRTUAL TABLE search USING fts5(body, summaries, content='', contentless_delete=1);

CREATE TABLE counters (
	name TEXT PRIMARY KEY,
	n    INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters(name, n) VALUES ('deliveries', 0), ('events', 0), ('invalid', 0), ('duplicates', 0), ('divergent', 0);

CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries BEGIN
	UPDATE counters SET n = n + 1 WHERE name = 'deliveries';
	UPDATE counters SET n = n + 1 WHERE name = 'invalid' AND new.signature = 'invalid';
END;
CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries BEGIN
	UPDATE counters SET n = n - 1 WHERE name = 'deliveries';
	UPDATE counters SET n = n - 1 WHERE name = 'invalid' AND old.signature = 'invalid';
END;
CREATE TRIGGER deliveries_count_signature AFTER UPDATE OF signature ON deliveries
WHEN (old.signature = 'invalid') <> (new.signature = 'invalid') BEGIN
	UPDATE counters SET n = n + (new.signature = 'invalid') - (old.signature = 'invalid') WHERE name = 'invalid';
END;
CREATE TRIGGER events_count_insert AFTER INSERT ON events BEGIN
	UPDATE counters SET n = n + 1 WHERE name = 'events';
	UPDATE counters SET n = n + 1 WHERE name = 'duplicates' AND new.duplicate <> 0;
	UPDATE counters SET n = n + 1 WHERE name = 'divergent' AND new.divergent <> 0;
END;
CREATE TRIGGER events_count_delete AFTER DELETE ON events BEGIN
	UPDATE counters SET n = n - 1 WHERE name = 'events';
	UPDATE counters SET n = n - 1 WHERE name = 'duplicates' AND old.duplicate <> 0;
	UPDATE counters SET n = n - 1 WHERE name = 'divergent' AND old.divergent <> 0;
END;

CREATE TABLE kv (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
) WITHOUT ROWID;
`

// schemaInbox is migration 4: the two numbers the delivery inbox kept in
// the store. ids_reserved was the highest delivery id handed out or
// reserved by an inbox (dropped by migration 5); inbox_moved is the
// highest id moved from an inbox, written in the same transaction as the
// moved rows: recovery applies only records above it (legacy.go still
// reads it, once, when it moves an older version's inbox in).
const schemaInbox = `
INSERT OR REPLACE INTO kv(key, value) VALUES ('ids_reserved', (SELECT coalesce(max(id), 0) FROM deliveries));
INSERT OR REPLACE INTO kv(key, value) VALUES ('inbox_moved', 0);
`

// schemaFaults is migration 5. A delivery keeps why reading its request
// stopped early and how the receiver answered (a bad chunked body showed
// as "the body is empty" once these were lost on the way into SQLite), and
// each body the SHA-256 digest it was stored with, checked on every read
// (NULL for bodies stored before). The reserved id blocks went (to a
// counter file every process shared, itself replaced by migration 10).
const schemaFaults = `
ALTER TABLE deliveries ADD COLUMN read_error TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN answer TEXT NOT NULL DEFAULT '';
ALTER TABLE bodies ADD COLUMN digest BLOB;
DELETE FROM kv WHERE key = 'ids_reserved';
`

// schemaOneLog is migration 10: SQLite is the one log (docs/storage.md).
//
//   - Ids: a new delivery takes the id after counters.last_id, which a
//     trigger raises with every insert, so an id is never handed out twice
//     even after the newest rows were deleted (a route's cursor may point
//     past them). It starts above everything an older version handed out:
//     stored rows, its inbox's moved watermark and the routes' cursors
//     (the inbox's remaining records keep their ids as they move in).
//   - Forwarding: a route's cursor row gains its lease (holder,
//     lease_until: one process forwards a route at a time), the delivery
//     being sent (sending: written before the send, so a send a crash cut
//     short is sent again marked as a re-forward) and off_at (when the
//     route was turned off: a route turned on again starts after the
//     newest delivery). The sessions go: a route owes every receiver
//     delivery above its cursor. Each cursor moves to just below the
//     first delivery its sessions still owed, or to the newest delivery
//     when they owed none.
const schemaOneLog = `
INSERT OR REPLACE INTO counters(name, n) VALUES ('last_id', max(
	coalesce((SELECT max(id) FROM deliveries), 0),
	coalesce((SELECT value FROM kv WHERE key = 'inbox_moved'), 0),
	coalesce((SELECT max(cursor) FROM forward_routes), 0)));
CREATE TRIGGER deliveries_last_id AFTER INSERT ON deliveries BEGIN
	UPDATE counters SET n = max(n, new.id) WHERE name = 'last_id';
END;
UPDATE forward_routes SET cursor = coalesce(
	(SELECT min(d.id) - 1 FROM deliveries d
		WHERE d.id > forward_routes.cursor AND d.source = 'receiver'
		AND EXISTS (SELECT 1 FROM forward_sessions s WHERE s.route = forward_routes.route AND d.id > s.from_id AND (s.to_id IS NULL OR d.id <= s.to_id))
		AND NOT EXISTS (SELECT 1 FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = forward_routes.route AND a.final = 1)),
	max(cursor, coalesce((SELECT max(id) FROM deliveries), 0)));
DROP TABLE forward_sessions;
ALTER TABLE forward_routes ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE forward_routes ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE forward_routes ADD COLUMN sending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE forward_routes ADD COLUMN off_at INTEGER NOT NULL DEFAULT 0;
`

// schemaAnalysisFile is migration 12: what analysis derives (the analysis
// JSON, the event rows and the full-text index) moves to the analysis
// file beside the store (analysis.go), so acks never wait for analysis's
// commits. Nothing is copied: every delivery is set unanalyzed, and
// analysis makes its rows again in the new file, in id order, with the
// same verdicts. analysis_gone is where the log records deleted
// deliveries until their analysis rows are gone too.
const schemaAnalysisFile = `
DROP TABLE events;
DROP TABLE search;
DELETE FROM counters WHERE name IN ('events', 'duplicates', 'divergent');
UPDATE deliveries SET analyzed = 0 WHERE analyzed = 1;
ALTER TABLE deliveries DROP COLUMN analysis;
CREATE TABLE analysis_gone (delivery_id INTEGER PRIMARY KEY);
DELETE FROM kv WHERE key = 'analysis_file';
`
