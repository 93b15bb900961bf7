package sandbox

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookscope/hookscope/internal/human"
)

// routes wires the sandbox's endpoints. The base URL and the auth URL are
// the same server: the spec lists /oauth/authorize under both.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/oauth/authorize", s.handleAuthorize)
	mux.HandleFunc("/oauth/token", s.handleToken)
	s.apiRoutes(mux)
	return s.logRequests(s.guard(mux))
}

// statusRecorder remembers the status a handler wrote, for the log line.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status written.
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// logRequests logs method, path and status of every request. Never the
// query: it carries codes, secrets and tokens.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		s.cfg.Logf("%s %s -> %d (%s)", r.Method, r.URL.Path, rec.status, human.Duration(time.Since(start)))
	})
}

// writeJSON writes v as an indented JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, `{"error":"server_error","error_description":"response encoding failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
