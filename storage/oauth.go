package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookscope/hookscope/oauthflow"
)

// schemaOAuth is migration 2: OAuth profiles, the current token per
// profile, flow state and transcripts. Each row keeps the domain value as
// JSON (these are small, read whole and never filtered by inner fields),
// with the columns lists and lookups need beside it. Client secrets and
// tokens live here; the file is 0600.
const schemaOAuth = `
CREATE TABLE oauth_profiles (
	name       TEXT PRIMARY KEY,
	data       TEXT NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE oauth_tokens (
	profile     TEXT PRIMARY KEY,
	data        TEXT NOT NULL,
	obtained_at INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL
);
CREATE TABLE oauth_flows (
	id         TEXT PRIMARY KEY,
	profile    TEXT NOT NULL,
	started_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	data       TEXT NOT NULL
);
CREATE INDEX oauth_flows_by_profile ON oauth_flows(profile, updated_at);
CREATE TABLE oauth_transcripts (
	id      INTEGER PRIMARY KEY,
	flow_id TEXT NOT NULL,
	profile TEXT NOT NULL,
	step    TEXT NOT NULL,
	at      INTEGER NOT NULL,
	ok      INTEGER NOT NULL,
	data    TEXT NOT NULL
);
CREATE INDEX oauth_transcripts_by_profile ON oauth_transcripts(profile, id);
CREATE INDEX oauth_transcripts_by_flow ON oauth_transcripts(flow_id, id);
`

// schemaOAuthScrub is migration 9: flow states written before it kept the
// full redirected callback URL (the code inside it) and, as "spent", the
// hashes of codes sent with when. The URL goes (the state keeps the
// callback's parameters; the callback transcript keeps the request); each
// hash becomes a code record whose answer is not known (older versions did
// not record it), so no code is called used up on a guess.
const schemaOAuthScrub = `
UPDATE oauth_flows SET data = json_remove(data, '$.callback.url')
WHERE json_type(data, '$.callback.url') IS NOT NULL;
UPDATE oauth_flows SET data = json_set(json_remove(data, '$.spent'), '$.codes',
	json((SELECT json_group_object(key, json_object('sent_at', value)) FROM json_each(oauth_flows.data, '$.spent'))))
WHERE json_type(data, '$.spent') = 'object';
UPDATE oauth_flows SET data = json_remove(data, '$.spent')
WHERE json_type(data, '$.spent') IS NOT NULL;
`

// DB implements oauthflow.Store.
var _ oauthflow.Store = (*DB)(nil)

// SaveProfile creates or replaces a profile by name.
func (db *DB) SaveProfile(ctx context.Context, p oauthflow.Profile) error {
	if p.Name == "" {
		return errors.New("save profile: empty name")
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("save profile %q: %w", p.Name, err)
	}
	if _, err := db.sql.ExecContext(ctx, `INSERT INTO oauth_profiles(name,data,updated_at) VALUES(?,?,?)
		ON CONFLICT(name) DO UPDATE SET data=excluded.data, updated_at=excluded.updated_at`,
		p.Name, string(data), time.Now().UnixNano()); err != nil {
		return fmt.Errorf("save profile %q: %w", p.Name, err)
	}
	return nil
}

// LoadProfile returns a profile by name.
func (db *DB) LoadProfile(ctx context.Context, name string) (oauthflow.Profile, error) {
	var p oauthflow.Profile
	var data string
	err := db.sql.QueryRowContext(ctx, `SELECT data FROM oauth_profiles WHERE name=?`, name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("load profile %q: %w", name, oauthflow.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("load profile %q: %w", name, err)
	}
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return p, fmt.Errorf("load profile %q: decode: %w", name, err)
	}
	return p, nil
}

// ListProfiles returns every profile sorted by name.
func (db *DB) ListProfiles(ctx context.Context) ([]oauthflow.Profile, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT name, data FROM oauth_profiles ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	defer rows.Close()
	var out []oauthflow.Profile
	for rows.Next() {
		var name, data string
		if err := rows.Scan(&name, &data); err != nil {
			return nil, fmt.Errorf("list profiles: %w", err)
		}
		var p oauthflow.Profile
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			return nil, fmt.Errorf("list profiles: decode %q: %w", name, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	return out, nil
}

// DeleteProfile removes a profile and its token; its history stays.
func (db *DB) DeleteProfile(ctx context.Context, name string) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete profile %q: %w", name, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM oauth_profiles WHERE name=?`, name)
	if err != nil {
		return fmt.Errorf("delete profile %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete profile %q: %w", name, oauthflow.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE profile=?`, name); err != nil {
		return fmt.Errorf("delete profile %q: token: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete profile %q: %w", name, err)
	}
	return nil
}

// SaveToken stores the current token of a profile.
func (db *DB) SaveToken(ctx context.Context, profile string, t oauthflow.Token) error {
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("save token of %q: %w", profile, err)
	}
	var exp int64
	if !t.ExpiresAt.IsZero() {
		exp = t.ExpiresAt.UnixNano()
	}
	if _, err := db.sql.ExecContext(ctx, `INSERT INTO oauth_tokens(profile,data,obtained_at,expires_at) VALUES(?,?,?,?)
		ON CONFLICT(profile) DO UPDATE SET data=excluded.data, obtained_at=excluded.obtained_at, expires_at=excluded.expires_at`,
		profile, string(data), t.ObtainedAt.UnixNano(), exp); err != nil {
		return fmt.Errorf("save token of %q: %w", profile, err)
	}
	return nil
}

// LoadToken returns the current token of a profile.
func (db *DB) LoadToken(ctx context.Context, profile string) (oauthflow.Token, error) {
	var t oauthflow.Token
	var data string
	err := db.sql.QueryRowContext(ctx, `SELECT data FROM oauth_tokens WHERE profile=?`, profile).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("load token of %q: %w", profile, oauthflow.ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("load token of %q: %w", profile, err)
	}
	if err := json.Unmarshal([]byte(data), &t); err != nil {
		return t, fmt.Errorf("load token of %q: decode: %w", profile, err)
	}
	return t, nil
}

// SaveFlowState stores or replaces a flow's state.
func (db *DB) SaveFlowState(ctx context.Context, s oauthflow.State) error {
	if s.ID == "" {
		return errors.New("save flow state: empty id")
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("save flow %s: %w", s.ID, err)
	}
	if _, err := db.sql.ExecContext(ctx, `INSERT INTO oauth_flows(id,profile,started_at,updated_at,data) VALUES(?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET profile=excluded.profile, updated_at=excluded.updated_at, data=excluded.data`,
		s.ID, s.Profile, s.Started.UnixNano(), time.Now().UnixNano(), string(data)); err != nil {
		return fmt.Errorf("save flow %s: %w", s.ID, err)
	}
	return nil
}

// LatestFlowState returns the most recently saved flow of a profile.
func (db *DB) LatestFlowState(ctx context.Context, profile string) (oauthflow.State, error) {
	var s oauthflow.State
	var data string
	err := db.sql.QueryRowContext(ctx, `SELECT data FROM oauth_flows WHERE profile=? ORDER BY updated_at DESC, rowid DESC LIMIT 1`, profile).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("load flow of %q: %w", profile, oauthflow.ErrNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("load flow of %q: %w", profile, err)
	}
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return s, fmt.Errorf("load flow of %q: decode: %w", profile, err)
	}
	return s, nil
}

// SaveTranscript stores a transcript and returns its id.
func (db *DB) SaveTranscript(ctx context.Context, t oauthflow.Transcript) (int64, error) {
	t.ID = 0
	data, err := json.Marshal(t)
	if err != nil {
		return 0, fmt.Errorf("save %s transcript: %w", t.Step, err)
	}
	ok := 0
	if t.OK() {
		ok = 1
	}
	res, err := db.sql.ExecContext(ctx, `INSERT INTO oauth_transcripts(flow_id,profile,step,at,ok,data) VALUES(?,?,?,?,?,?)`,
		t.FlowID, t.Profile, string(t.Step), t.Time.UnixNano(), ok, string(data))
	if err != nil {
		return 0, fmt.Errorf("save %s transcript: %w", t.Step, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("save %s transcript: %w", t.Step, err)
	}
	return id, nil
}

// ListTranscripts returns up to limit transcripts (the latest ones),
// oldest first, filtered by profile and flow when not empty. limit <= 0
// means 1000.
func (db *DB) ListTranscripts(ctx context.Context, profile, flowID string, limit int) ([]oauthflow.Transcript, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT id, data FROM (
		SELECT id, data FROM oauth_transcripts
		WHERE (?1 = '' OR profile = ?1) AND (?2 = '' OR flow_id = ?2)
		ORDER BY id DESC LIMIT ?3) ORDER BY id`, profile, flowID, limit)
	if err != nil {
		return nil, fmt.Errorf("list transcripts: %w", err)
	}
	defer rows.Close()
	var out []oauthflow.Transcript
	for rows.Next() {
		var id int64
		var data string
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("list transcripts: %w", err)
		}
		var t oauthflow.Transcript
		if err := json.Unmarshal([]byte(data), &t); err != nil {
			return nil, fmt.Errorf("list transcripts: decode %d: %w", id, err)
		}
		t.ID = id
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list transcripts: %w", err)
	}
	return out, nil
}
