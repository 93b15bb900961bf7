package ui

import "testing"

// BenchmarkOAuthSandboxFlow measures "Try with the sandbox" to a token on
// screen, through the widgets (the browser played by sandbox.Browser).
func BenchmarkOAuthSandboxFlow(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := newOAuthHarness(b)
		b.StartTimer()
		h.login(b)
		if h.tab.steps.token == nil {
			b.Fatal("no token")
		}
	}
}
