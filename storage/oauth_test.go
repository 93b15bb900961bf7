package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/oauthflow"
)

func openOAuthTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "hs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOAuthProfilesRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openOAuthTestDB(t)
	if _, err := db.LoadProfile(ctx, "none"); !errors.Is(err, oauthflow.ErrNotFound) {
		t.Fatalf("missing profile: got %v, want ErrNotFound", err)
	}
	p := oauthflow.Profile{Name: "dev", BaseURL: "http://127.0.0.1:1", ClientID: "id", ClientSecret: "s3cret", RedirectURI: "http://127.0.0.1:2/cb", Scopes: []string{"media:read"}}
	if err := db.SaveProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.ClientID = "id2"
	if err := db.SaveProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveProfile(ctx, oauthflow.Profile{Name: "a", BaseURL: "http://x"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.LoadProfile(ctx, "dev")
	if err != nil || got.ClientID != "id2" || got.ClientSecret != "s3cret" || len(got.Scopes) != 1 {
		t.Fatalf("LoadProfile = %+v, %v", got, err)
	}
	all, err := db.ListProfiles(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "a" || all[1].Name != "dev" {
		t.Fatalf("ListProfiles = %+v, %v", all, err)
	}
	if err := db.SaveToken(ctx, "dev", oauthflow.Token{AccessToken: "at"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteProfile(ctx, "dev"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadToken(ctx, "dev"); !errors.Is(err, oauthflow.ErrNotFound) {
		t.Fatalf("token after delete: %v", err)
	}
	if err := db.DeleteProfile(ctx, "dev"); !errors.Is(err, oauthflow.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if err := db.SaveProfile(ctx, oauthflow.Profile{}); err == nil {
		t.Fatal("a profile without a name was saved")
	}
}

func TestOAuthTokensFlowsTranscripts(t *testing.T) {
	ctx := context.Background()
	db := openOAuthTestDB(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := oauthflow.Token{AccessToken: "at1", RefreshToken: "rt1", TokenType: "bearer", ExpiresIn: 60, Scope: []string{"all:all"}, ObtainedAt: now, ExpiresAt: now.Add(time.Minute)}
	if err := db.SaveToken(ctx, "dev", tok); err != nil {
		t.Fatal(err)
	}
	tok.AccessToken = "at2"
	if err := db.SaveToken(ctx, "dev", tok); err != nil {
		t.Fatal(err)
	}
	got, err := db.LoadToken(ctx, "dev")
	if err != nil || got.AccessToken != "at2" || got.RefreshToken != "rt1" || !got.ExpiresAt.Equal(tok.ExpiresAt) {
		t.Fatalf("LoadToken = %+v, %v", got, err)
	}

	if _, err := db.LatestFlowState(ctx, "dev"); !errors.Is(err, oauthflow.ErrNotFound) {
		t.Fatalf("no flow: %v", err)
	}
	for _, id := range []string{"f1", "f2"} {
		s := oauthflow.State{ID: id, Profile: "dev", Started: now, RedirectURI: "http://127.0.0.1:2/cb?hs_state=" + id,
			Codes: map[string]oauthflow.CodeUse{"h": {SentAt: now, Outcome: oauthflow.OutcomeExchanged}}}
		if err := db.SaveFlowState(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	st, err := db.LatestFlowState(ctx, "dev")
	if err != nil || st.ID != "f2" || st.Codes["h"].SentAt.IsZero() || !st.Codes["h"].Spent() {
		t.Fatalf("LatestFlowState = %+v, %v", st, err)
	}

	for i, step := range []oauthflow.Step{oauthflow.StepAuthorize, oauthflow.StepExchange, oauthflow.StepCall} {
		tr := oauthflow.Transcript{FlowID: "f2", Profile: "dev", Step: step, Time: now.Add(time.Duration(i) * time.Second),
			Request:  oauthflow.Request{Method: "POST", URL: "http://x/oauth/token?code=c"},
			Response: &oauthflow.Response{Status: 200, Body: `{"access_token":"at"}`, Duration: time.Millisecond}}
		if step == oauthflow.StepCall {
			tr.Error = "HTTP 401"
		}
		id, err := db.SaveTranscript(ctx, tr)
		if err != nil || id == 0 {
			t.Fatalf("SaveTranscript = %d, %v", id, err)
		}
	}
	if _, err := db.SaveTranscript(ctx, oauthflow.Transcript{FlowID: "other", Profile: "p2", Step: oauthflow.StepCall, Time: now}); err != nil {
		t.Fatal(err)
	}
	ts, err := db.ListTranscripts(ctx, "dev", "", 2)
	if err != nil || len(ts) != 2 || ts[0].Step != oauthflow.StepExchange || ts[1].Step != oauthflow.StepCall || ts[1].OK() || ts[0].ID >= ts[1].ID {
		t.Fatalf("ListTranscripts(dev, 2) = %+v, %v", ts, err)
	}
	if ts[0].Response == nil || ts[0].Response.Body != `{"access_token":"at"}` || ts[0].Response.Duration != time.Millisecond {
		t.Fatalf("transcript response not kept: %+v", ts[0].Response)
	}
	all, err := db.ListTranscripts(ctx, "", "", 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("ListTranscripts(all) = %d, %v", len(all), err)
	}
	byFlow, err := db.ListTranscripts(ctx, "", "other", 0)
	if err != nil || len(byFlow) != 1 {
		t.Fatalf("ListTranscripts(flow) = %d, %v", len(byFlow), err)
	}
	fi, err := os.Stat(db.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file mode = %v, %v; want 0600 (it holds secrets)", fi.Mode().Perm(), err)
	}
}

// Migration 9 scrubs what older versions kept in the flow state: the full
// callback URL (the code inside it) goes, and the hashes of codes sent
// become code records whose answer is not known.
func TestMigration9ScrubsOldFlowStates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"id":"f1","profile":"dev","started":"2026-01-02T03:04:05Z","redirect_uri":"http://127.0.0.1:2/cb?hs_state=s",` +
		`"callback":{"url":"http://127.0.0.1:2/cb?hs_state=s&code=the-old-code-123&account_id=1","code":"the-old-code-123","account_id":"1",` +
		`"params":[{"name":"hs_state","value":"s"},{"name":"code","value":"the-old-code-123"},{"name":"account_id","value":"1"}]},` +
		`"spent":{"3c1a":"2026-01-02T03:05:00Z"}}`
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO oauth_flows(id,profile,started_at,updated_at,data) VALUES('f1','dev',1,1,?)`, old); err != nil {
		t.Fatal(err)
	}
	// As a store written before version 9.
	if _, err := db.SQL().ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 9`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var raw string
	if err := db.SQL().QueryRowContext(ctx, `SELECT data FROM oauth_flows WHERE id='f1'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, `"url"`) || strings.Contains(raw, "code=the-old-code") || strings.Contains(raw, `"spent"`) {
		t.Fatalf("not scrubbed: %s", raw)
	}
	st, err := db.LatestFlowState(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	u, ok := st.Codes["3c1a"]
	if st.Callback == nil || st.Callback.Code != "the-old-code-123" || st.Callback.AccountID != "1" || len(st.Callback.Params) != 3 ||
		!ok || !u.SentAt.Equal(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)) || u.Outcome != "" || u.Spent() {
		t.Fatalf("migrated state %+v (code use %+v)", st, u)
	}
}
