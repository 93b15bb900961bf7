package relay

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

func testSeed(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := kp.Seed()
	return string(s)
}

func TestConnStringRoundTripAndRedaction(t *testing.T) {
	c := ConnString{URL: "wss://relay.example/nats", Name: "alice", Seed: testSeed(t), Stream: "HOOKSCOPE", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	line := c.String()
	if strings.ContainsAny(line, " \n\t") {
		t.Fatalf("connection string is not one word: %q", line)
	}
	got, err := ParseConnString("  " + line + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Fatalf("round trip: got %+v, want %+v", got, c)
	}
	if r := c.Redacted(); strings.Contains(r, c.Seed) || !strings.Contains(r, "alice") {
		t.Fatalf("Redacted() = %q", r)
	}
}

func TestParseConnStringErrorsNeverQuoteIt(t *testing.T) {
	seed := testSeed(t)
	good := ConnString{URL: "ws://h/nats", Name: "bob", Seed: seed, Stream: "S"}.String()
	tests := []struct {
		name, in, want string
	}{
		{"not one", "nats://user:pass@host", "not a relay connection string"},
		{"later form", "hookscope-relay-2:abc", "later form"},
		{"cut short", good[:len(good)-9], "damaged"},
		{"no seed", ConnString{URL: "ws://h/nats", Name: "bob", Stream: "S"}.String(), "lacks"},
		{"bad name", ConnString{URL: "ws://h/nats", Name: "Bob.x", Seed: seed, Stream: "S"}.String(), "no valid credential"},
		{"bad seed", ConnString{URL: "ws://h/nats", Name: "bob", Seed: "SUAnotaseed", Stream: "S"}.String(), "credential is damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConnString(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), seed) || (len(tt.in) > 20 && strings.Contains(err.Error(), tt.in[18:])) {
				t.Fatalf("the error quotes the string: %v", err)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"alice": true, "ci-main": true, "a": true, "0day": true, strings.Repeat("a", 32): true,
		"": false, "Alice": false, "a.b": false, "a_b": false, "a*": false, "-a": false, "a b": false, strings.Repeat("a", 33): false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
	}
}

func TestWebSocketURL(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"https://words.trycloudflare.com", "wss://words.trycloudflare.com/nats", ""},
		{"https://relay.example/webhooks?x=1", "wss://relay.example/nats", ""},
		{"http://192.168.1.20:8787", "ws://192.168.1.20:8787/nats", ""},
		{"https://user:pw@relay.example", "wss://relay.example/nats", ""},
		{"ftp://relay.example", "", "must be http"},
		{"relay.example", "", "not an absolute URL"},
	}
	for _, tt := range tests {
		got, err := WebSocketURL(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("WebSocketURL(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	s := &Server{opts: Options{ClientAddr: "0.0.0.0:4222", Stream: DefaultStream}}
	creds := &Credentials{RelaySeed: testSeed(t)}
	o, err := s.serverOptions(creds)
	if err != nil {
		t.Fatalf("with the relay's own key as a user: %v", err)
	}
	o.Nkeys = nil
	if err := checkExposure(o); err == nil || !strings.Contains(err.Error(), "without authentication") {
		t.Fatalf("no users on 0.0.0.0: err = %v", err)
	}
	o.Host = "127.0.0.1"
	if err := checkExposure(o); err != nil {
		t.Fatalf("no users on loopback: %v", err)
	}
}

func TestCredentialsInviteRevoke(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var seed string
	if err := UpdateCredentials(dir, func(c *Credentials) (err error) {
		seed, err = c.Invite("alice", false, now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.RelaySeed == "" || len(c.Users) != 1 || c.Users[0].Name != "alice" {
		t.Fatalf("credentials after invite: %+v", c)
	}
	kp, _ := nkeys.FromSeed([]byte(seed))
	pub, _ := kp.PublicKey()
	if c.Users[0].PublicKey != pub {
		t.Fatal("the stored public key is not the seed's")
	}
	raw := readFile(t, dir+"/"+credentialsFile)
	if strings.Contains(raw, seed) {
		t.Fatal("the laptop's seed is kept in the credentials file")
	}
	if _, err := c.Invite("alice", false, now); err == nil || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("second invite: %v", err)
	}
	if err := c.Revoke("alice", now); err != nil {
		t.Fatal(err)
	}
	if err := c.Revoke("alice", now); err == nil || !strings.Contains(err.Error(), "already revoked") {
		t.Fatalf("second revoke: %v", err)
	}
	if err := c.Revoke("carol", now); err == nil || !strings.Contains(err.Error(), "no credential called carol") {
		t.Fatalf("revoke unknown: %v", err)
	}
	users, err := c.nkeyUsers(DefaultStream)
	if err != nil || len(users) != 1 {
		t.Fatalf("a revoked user is still a server user: %v %v", users, err)
	}
	if _, err := c.Invite("alice", false, now); err != nil {
		t.Fatalf("inviting a revoked name again: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
