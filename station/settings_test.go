package station

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/rules"
)

// TestSettingsRoundTrip: saved settings read back the same; none saved
// reads the defaults; what a version before answer rules saved (an
// answer mode) reads as the one rule it was.
func TestSettingsRoundTrip(t *testing.T) {
	ctx := context.Background()
	kv := memKV{}
	set, saved, err := SavedSettings(ctx, kv)
	if err != nil || saved || !set.Equal(DefaultSettings()) {
		t.Fatalf("nothing saved: %+v %v %v", set, saved, err)
	}
	set.AnswerRules = []string{`media.* => 500 x2 then 200`, `close`}
	set.ForwardTo, set.ForwardOn, set.ForwardMode = `where media.* => localhost:3000/m http://localhost:4000/`, true, "pass-through"
	set.Keep = 50
	if err := SaveSettings(ctx, kv, set); err != nil {
		t.Fatal(err)
	}
	got, saved, err := SavedSettings(ctx, kv)
	if err != nil || !saved || !got.Equal(set) {
		t.Fatalf("read back %+v (saved %v, %v), want %+v", got, saved, err, set)
	}
	for mode, want := range map[string][]string{"500": {"500"}, "hang": {"hang"}, "close": {"close"}, "200": nil} {
		kv[SettingsKey] = []byte(`{"listen_addr":"127.0.0.1:9000","path":"/h","max_body":2048,"answer":"` + mode + `"}`)
		got, err := LoadSettings(ctx, kv)
		if err != nil || strings.Join(got.AnswerRules, "|") != strings.Join(want, "|") || got.ListenAddr != "127.0.0.1:9000" {
			t.Errorf("answer mode %s: rules %q, %v", mode, got.AnswerRules, err)
		}
	}
	kv[SettingsKey] = []byte(`{"listen_addr":`)
	if got, err := LoadSettings(ctx, kv); err == nil || !got.Equal(DefaultSettings()) {
		t.Errorf("unreadable settings: %v", err)
	}
}

// TestSettingsValidate: what is wrong is said; a bad answer rule names
// its place and column; pass-through with answer rules is allowed (the
// rules answer what no route takes).
func TestSettingsValidate(t *testing.T) {
	ca := writeCA(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		err  string
	}{
		{"defaults", func(*Settings) {}, ""},
		{"remote", func(s *Settings) { s.ListenAddr = "0.0.0.0:8787" }, "not a loopback address"},
		{"path", func(s *Settings) { s.Path = "hooks" }, "must start with /"},
		{"rule", func(s *Settings) { s.AnswerRules = []string{"500", "media.* => 50"} }, "answer rule 2"},
		{"route", func(s *Settings) { s.ForwardTo, s.ForwardOn = "where delivery.pth == 1 => http://a/", true }, "undefined field 'pth'"},
		{"pass-through and rules", func(s *Settings) {
			s.ForwardTo, s.ForwardOn, s.ForwardMode, s.AnswerRules = "http://localhost:3000/", true, "pass-through", []string{"500"}
		}, ""},
		{"ca", func(s *Settings) { s.ForwardTo, s.ForwardOn, s.ForwardCA = "https://a/", true, ca }, ""},
		{"missing ca", func(s *Settings) { s.ForwardTo, s.ForwardOn, s.ForwardCA = "https://a/", true, ca+".gone" }, "forward CA file: open"},
		{"ca not pem", func(s *Settings) { s.ForwardTo, s.ForwardOn, s.ForwardCA = "https://a/", true, notPEM }, "holds no PEM certificate"},
		{"forwarding off", func(s *Settings) { s.ForwardTo, s.ForwardCA = "ftp://a/", ca+".gone" }, ""},
	} {
		set := DefaultSettings()
		tc.edit(&set)
		err := set.Validate()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	set := DefaultSettings()
	set.AnswerRules = []string{"500", `events.exists(e, e.tpye == "x") => 500`}
	var re *rules.RuleError
	var ce rules.CompileErrors
	if err := set.Validate(); !errors.As(err, &re) || re.Index != 1 || !errors.As(err, &ce) || ce[0].Column != 19 {
		t.Errorf("a bad rule: %v", err)
	}
	set = DefaultSettings()
	set.ForwardTo, set.ForwardOn, set.ForwardCA = "https://a/ media.*=http://b/", true, ca
	cfg, err := set.ForwardConfig()
	if err != nil || len(cfg.Routes) != 2 || cfg.CAFile != ca || cfg.Mode != forward.ModeAck {
		t.Errorf("forward config %+v, %v", cfg, err)
	}
	if w := (Settings{AnswerRules: []string{"hang"}}).AnswerWarning(); w != "holding every delivery 15 s, then answering 200" {
		t.Errorf("warning %q", w)
	}
}

// writeCA writes a self-signed CA certificate as PEM and returns its path.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
