package oauthflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookscope/hookscope/oauthflow"
)

func benchTranscript() oauthflow.Transcript {
	return oauthflow.Transcript{Step: oauthflow.StepExchange, Request: oauthflow.Request{Method: "POST",
		URL: "http://127.0.0.1:8790/oauth/token?client_id=sandbox-demo-client&client_secret=sandbox-demo-secret&grant_type=authorization_code&code=Zm9vYmFyYmF6cXV4&redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2Fcallback%3Fhs_state%3Dabc"},
		Response: &oauthflow.Response{Status: 200, Body: `{"access_token":"AT-0123456789abcdef","token_type":"bearer","expires_in":21600,"refresh_token":"RT-0123456789abcdef","scope":["all:all"]}`}}
}

// BenchmarkRedact measures hiding secrets in one token exchange transcript
// on its own (patterns compiled per call).
func BenchmarkRedact(b *testing.B) {
	t := benchTranscript()
	secrets := []string{"sandbox-demo-secret", "Zm9vYmFyYmF6cXV4", "AT-0123456789abcdef", "RT-0123456789abcdef"}
	b.ReportAllocs()
	for b.Loop() {
		_ = oauthflow.Redact(t, secrets...)
	}
}

// BenchmarkRedactAll20 measures redacting a 20-step flow history at once
// (what a Markdown or HAR export pays).
func BenchmarkRedactAll20(b *testing.B) {
	ts := make([]oauthflow.Transcript, 20)
	for i := range ts {
		ts[i] = benchTranscript()
	}
	secrets := []string{"sandbox-demo-secret", "Zm9vYmFyYmF6cXV4", "AT-0123456789abcdef", "RT-0123456789abcdef"}
	b.ReportAllocs()
	for b.Loop() {
		_ = oauthflow.RedactAll(ts, secrets...)
	}
}

// BenchmarkParseTokenResponse measures the lenient token parser.
func BenchmarkParseTokenResponse(b *testing.B) {
	body := []byte(benchTranscript().Response.Body)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = oauthflow.ParseTokenResponse(200, "application/json", body, now)
	}
}

// BenchmarkAuthorizeAndExchange measures one whole authorization against
// the sandbox on loopback: authorize URL, the sandbox's pages (consent is
// skipped after the first grant), the pasted callback and the exchange.
func BenchmarkAuthorizeAndExchange(b *testing.B) {
	e := newEnv(b, "https://tunnel.example.com/oauth/callback", nil)
	br := owner()
	ctx := context.Background()
	for b.Loop() {
		f, err := oauthflow.New(e.profile, oauthflow.Options{})
		if err != nil {
			b.Fatal(err)
		}
		u, _ := f.AuthorizeURL(ctx)
		loc, err := br.Authorize(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.AcceptCallbackURL(ctx, loc.String()); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Exchange(ctx, "", false); err != nil {
			b.Fatal(err)
		}
	}
}
