package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/redact"
)

// Which scopes let a token do what (spec 5.2): medias#show is also open to
// media:upload; changes need all:all.
func scopesShow() []string  { return []string{"media:read", "all:read", "all:all", "media:upload"} }
func scopesList() []string  { return []string{"media:read", "all:read", "all:all"} }
func scopesWrite() []string { return []string{"all:all"} }
func scopesUp() []string    { return []string{"media:upload", "all:all"} }

func (s *Server) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/medias", s.handleListMedias)
	mux.HandleFunc("GET /v1/medias.json", s.handleListMedias)
	mux.HandleFunc("GET /v1/medias/{id}", s.handleShowMedia)
	mux.HandleFunc("PUT /v1/medias/{id}", s.handleUpdateMedia)
	mux.HandleFunc("DELETE /v1/medias/{id}", s.handleDeleteMedia)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found",
			"error_description": fmt.Sprintf("%s %s is not part of the sandbox's Data API slice (GET/PUT/DELETE /v1/medias/<hashed_id>, GET /v1/medias)", r.Method, r.URL.Path)})
	})
	mux.HandleFunc("POST /upload", s.handleUpload)
	mux.HandleFunc("POST /sandbox/lifecycle", s.handleLifecycle)
	mux.HandleFunc("POST /sandbox/events", s.handleEvents)
	mux.HandleFunc("POST /sandbox/revoke", s.handleRevoke)
	mux.HandleFunc("/sandbox/logout", s.handleLogout)
	mux.HandleFunc("GET /{$}", s.handleIndex)
}

// apiError writes a JSON error of the Data and Upload APIs. The spec does
// not show their error bodies; the sandbox uses the token endpoint's shape
// so a client needs only one parser.
func apiError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="sandbox", error=%q`, code))
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// authenticate finds the access token the way spec 5.5 allows: the
// access_token or bearer_token query parameter, or (not on the Upload API)
// the Authorization: Bearer header. It writes the error response itself
// and returns nil when the request may not proceed.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, uploadAPI bool, allowed []string) *accessToken {
	q := r.URL.Query()
	type cand struct{ how, tok string }
	var found []cand
	for _, p := range []string{"access_token", "bearer_token"} {
		if v := q.Get(p); v != "" {
			found = append(found, cand{p + " query parameter", v})
		}
	}
	auth := r.Header.Get("Authorization")
	if auth != "" {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(auth), " ")
		switch {
		case uploadAPI && len(found) == 0:
			apiError(w, http.StatusUnauthorized, "invalid_request",
				"The Upload API accepts only the access_token and bearer_token query parameters (spec 5.5, methods 1 and 2); it does not read the Authorization header. Send ?access_token=<ACCESS_TOKEN> instead.")
			return nil
		case uploadAPI:
			w.Header().Set("X-Sandbox-Note", "the Authorization header was ignored: the Upload API reads only the access_token and bearer_token query parameters")
		case !strings.EqualFold(scheme, "Bearer"):
			apiError(w, http.StatusUnauthorized, "invalid_request",
				fmt.Sprintf("the Authorization header uses the %q scheme; the service expects Authorization: Bearer <ACCESS_TOKEN>", scheme))
			return nil
		default:
			found = append(found, cand{"Authorization header", strings.TrimSpace(tok)})
		}
	}
	if len(found) == 0 {
		apiError(w, http.StatusUnauthorized, "invalid_request",
			"no access token: send access_token=<ACCESS_TOKEN> or bearer_token=<ACCESS_TOKEN> in the query, or the header Authorization: Bearer <ACCESS_TOKEN>")
		return nil
	}
	for _, c := range found[1:] {
		if c.tok != found[0].tok {
			apiError(w, http.StatusBadRequest, "invalid_request",
				fmt.Sprintf("the %s and the %s carry different tokens; send one", found[0].how, c.how))
			return nil
		}
	}
	now := s.cfg.Now()
	s.mu.Lock()
	t := s.access[found[0].tok]
	var tok accessToken
	if t != nil {
		tok = *t
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		apiError(w, http.StatusUnauthorized, "invalid_token",
			fmt.Sprintf("the access token (sent as %s) is unknown: it was never issued by this sandbox, is a refresh token, or the sandbox was restarted (tokens live in memory)", found[0].how))
		return nil
	case tok.revoked:
		apiError(w, http.StatusUnauthorized, "invalid_token",
			"the user revoked this application's access in the account settings; the token no longer works, go through the authorization flow again")
		return nil
	case now.After(tok.expires):
		apiError(w, http.StatusUnauthorized, "invalid_token",
			fmt.Sprintf("the access token expired %s ago (at %s); get a new one with grant_type=refresh_token", human.Duration(now.Sub(tok.expires)), tok.expires.UTC().Format(time.RFC3339)))
		return nil
	}
	for _, sc := range tok.scopes {
		if slices.Contains(allowed, sc) {
			return &tok
		}
	}
	apiError(w, http.StatusForbidden, "insufficient_scope",
		fmt.Sprintf("this request needs one of the scopes %s; the token was granted %s. Change the application's permissions and authorize again: existing tokens keep their scopes (spec 5.2)",
			strings.Join(allowed, ", "), strings.Join(tok.scopes, ", ")))
	return nil
}

// mediaJSON is the sandbox's media object: the fields of spec 2.4 (the
// Data API's full object is not shown) plus a few a developer expects.
type mediaJSON struct {
	ID          string            `json:"id"`
	HashedID    string            `json:"hashed_id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	URL         string            `json:"url"`
	Duration    float64           `json:"duration"`
	Thumbnail   catalog.Thumbnail `json:"thumbnail"`
	Project     catalog.Project   `json:"project"`
	Status      string            `json:"status"`
	Created     string            `json:"created"`
	Updated     string            `json:"updated"`
}

func (s *Server) accountURL(id string) string {
	for _, u := range s.users {
		for _, m := range u.Memberships {
			if m.Account.ID == id {
				return strings.TrimRight(m.Account.URL, "/")
			}
		}
	}
	return ""
}

func (s *Server) catalogMedia(m *Media) *catalog.Media {
	d := m.Duration
	return &catalog.Media{ID: m.HashedID, Name: m.Name, URL: s.accountURL(m.AccountID) + "/medias/" + m.HashedID,
		Duration: &d, Thumbnail: &catalog.Thumbnail{URL: thumbnailURL(m)}}
}

func thumbnailURL(m *Media) string {
	return "https://embed.video.example/deliveries/" + stableID("thumb", m.HashedID) + stableID("thumb2", m.HashedID) + ".jpg?image_crop_resized=640x360"
}

func (s *Server) mediaView(m *Media) mediaJSON {
	cm := s.catalogMedia(m)
	return mediaJSON{ID: m.HashedID, HashedID: m.HashedID, Name: m.Name, Description: m.Description, URL: cm.URL,
		Duration: m.Duration, Thumbnail: *cm.Thumbnail, Project: catalog.Project{ID: m.Project.ID, Name: m.Project.Name},
		Status: m.Status, Created: m.Created.UTC().Format(time.RFC3339), Updated: m.Updated.UTC().Format(time.RFC3339)}
}

// mediaFor returns a copy of the media if it belongs to the token's
// account; media of other accounts are reported as unknown, as a real API
// would not confirm they exist.
func (s *Server) mediaFor(w http.ResponseWriter, r *http.Request, tok *accessToken) *Media {
	id := strings.TrimSuffix(r.PathValue("id"), ".json")
	s.mu.Lock()
	m := s.medias[id]
	var cp Media
	if m != nil {
		cp = *m
	}
	s.mu.Unlock()
	if m == nil || cp.AccountID != tok.accountID {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no media with hashed id %q in account %s", id, tok.accountID))
		return nil
	}
	return &cp
}

func (s *Server) handleShowMedia(w http.ResponseWriter, r *http.Request) {
	tok := s.authenticate(w, r, false, scopesShow())
	if tok == nil {
		return
	}
	if m := s.mediaFor(w, r, tok); m != nil {
		writeJSON(w, http.StatusOK, s.mediaView(m))
	}
}

func (s *Server) handleListMedias(w http.ResponseWriter, r *http.Request) {
	tok := s.authenticate(w, r, false, scopesList())
	if tok == nil {
		return
	}
	out := []mediaJSON{}
	for _, m := range s.Medias() {
		if m.AccountID == tok.accountID {
			out = append(out, s.mediaView(&m))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// readUpdate reads name and description from a JSON or form body.
func readUpdate(r *http.Request) (map[string]string, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	out := map[string]string{}
	switch ct {
	case "application/json":
		var body map[string]any
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		if err := dec.Decode(&body); err != nil {
			return nil, fmt.Errorf("the JSON body cannot be parsed: %v", err)
		}
		for _, k := range []string{"name", "description"} {
			v, ok := body[k]
			if !ok {
				continue
			}
			sv, isStr := v.(string)
			if !isStr {
				return nil, fmt.Errorf("%s must be a string", k)
			}
			out[k] = sv
		}
	default:
		r.Body = io.NopCloser(io.LimitReader(r.Body, 1<<20))
		if err := r.ParseForm(); err != nil {
			return nil, fmt.Errorf("the form body cannot be parsed: %v", err)
		}
		// r.Form includes query parameters, which clients of the real
		// Data API also use for updates.
		for _, k := range []string{"name", "description"} {
			if vs, ok := r.Form[k]; ok {
				out[k] = vs[0]
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("nothing to update: send name and/or description as JSON or form fields")
	}
	if n, ok := out["name"]; ok && strings.TrimSpace(n) == "" {
		return nil, errors.New("name cannot be empty")
	}
	return out, nil
}

func (s *Server) handleUpdateMedia(w http.ResponseWriter, r *http.Request) {
	tok := s.authenticate(w, r, false, scopesWrite())
	if tok == nil {
		return
	}
	if s.mediaFor(w, r, tok) == nil {
		return
	}
	upd, err := readUpdate(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	id := strings.TrimSuffix(r.PathValue("id"), ".json")
	s.mu.Lock()
	m := s.medias[id]
	if m == nil {
		s.mu.Unlock()
		apiError(w, http.StatusNotFound, "not_found", "the media was deleted meanwhile")
		return
	}
	prev := map[string]string{}
	if v, ok := upd["name"]; ok && v != m.Name {
		prev["name"] = m.Name
		m.Name = v
	}
	if v, ok := upd["description"]; ok && v != m.Description {
		prev["description"] = m.Description
		m.Description = v
	}
	if len(prev) > 0 {
		m.Updated = s.cfg.Now().UTC().Truncate(time.Second)
	}
	cp := *m
	s.mu.Unlock()
	if len(prev) > 0 {
		raw, _ := json.Marshal(prev) // a map of strings always marshals
		s.emit(catalog.TypeMediaUpdated, cp.AccountID, &catalog.MediaUpdated{Media: s.catalogMedia(&cp),
			Project: &catalog.Project{ID: cp.Project.ID, Name: cp.Project.Name}, PreviousAttributes: raw})
	}
	writeJSON(w, http.StatusOK, s.mediaView(&cp))
}

func (s *Server) handleDeleteMedia(w http.ResponseWriter, r *http.Request) {
	tok := s.authenticate(w, r, false, scopesWrite())
	if tok == nil {
		return
	}
	m := s.mediaFor(w, r, tok)
	if m == nil {
		return
	}
	s.mu.Lock()
	delete(s.medias, m.HashedID)
	s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == m.HashedID })
	s.mu.Unlock()
	s.emit(catalog.TypeMediaDeleted, m.AccountID, &catalog.MediaDeleted{Media: &catalog.DeletedMedia{ID: m.HashedID},
		Project: &catalog.Project{ID: m.Project.ID, Name: m.Project.Name}})
	writeJSON(w, http.StatusOK, s.mediaView(m))
}

// maxUpload caps what the Upload API reads; the bytes are counted and
// dropped, the sandbox stores no video.
const maxUpload = 64 << 20

// handleUpload is the sandbox's Upload API: POST /upload with the token in
// the query only. The file may come as a multipart "file" part or as the
// raw body; name and project_id come from the form or the query.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	tok := s.authenticate(w, r, true, scopesUp())
	if tok == nil {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	name, project := r.URL.Query().Get("name"), r.URL.Query().Get("project_id")
	var size int64
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		mr, err := r.MultipartReader()
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid_request", "the multipart body cannot be read: "+err.Error())
			return
		}
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				apiError(w, http.StatusBadRequest, "invalid_request", "the multipart body cannot be read: "+err.Error())
				return
			}
			switch p.FormName() {
			case "file":
				if name == "" {
					name = strings.TrimSuffix(p.FileName(), pathExt(p.FileName()))
				}
				n, err := io.Copy(io.Discard, p)
				if err != nil {
					apiError(w, http.StatusRequestEntityTooLarge, "invalid_request", fmt.Sprintf("the upload could not be read (the sandbox accepts up to %d MB): %v", maxUpload>>20, err))
					return
				}
				size += n
			case "name", "project_id":
				b, _ := io.ReadAll(io.LimitReader(p, 4096))
				if p.FormName() == "name" {
					name = string(b)
				} else {
					project = string(b)
				}
			}
		}
	} else {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			apiError(w, http.StatusRequestEntityTooLarge, "invalid_request", fmt.Sprintf("the upload could not be read (the sandbox accepts up to %d MB): %v", maxUpload>>20, err))
			return
		}
		size = n
	}
	if size == 0 {
		apiError(w, http.StatusBadRequest, "invalid_request", "no file: send the video as a multipart part named file, or as the raw request body")
		return
	}
	m := s.startLifecycle(tok.accountID, name, project, false)
	writeJSON(w, http.StatusOK, s.mediaView(&m))
}

func pathExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[i:]
	}
	return ""
}

// handleLifecycle is the sandbox's own control endpoint: it creates a media
// in an account and runs it through created -> processing -> ready (or
// failed with fail=1), so a developer sees webhooks on demand. It needs no
// token: it stands for activity in the service's web UI.
func (s *Server) handleLifecycle(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	account := r.Form.Get("account_id")
	if account == "" {
		account = s.users[0].Memberships[0].Account.ID
	}
	if s.accountURL(account) == "" && !s.hasAccount(account) {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no account %q in this sandbox", account))
		return
	}
	fail := r.Form.Get("fail") == "1" || r.Form.Get("fail") == "true"
	m := s.startLifecycle(account, r.Form.Get("name"), r.Form.Get("project_id"), fail)
	writeJSON(w, http.StatusAccepted, s.mediaView(&m))
}

func (s *Server) hasAccount(id string) bool {
	for _, u := range s.users {
		for _, m := range u.Memberships {
			if m.Account.ID == id {
				return true
			}
		}
	}
	return false
}

// Lifecycle creates a media in account and runs it through the processing
// life cycle asynchronously, emitting media.created, media.processing and
// media.ready (media.failed when fail is set). It returns the new media.
func (s *Server) Lifecycle(accountID, name string, fail bool) (Media, error) {
	if !s.hasAccount(accountID) {
		return Media{}, fmt.Errorf("lifecycle: no account %q in this sandbox", accountID)
	}
	return s.startLifecycle(accountID, name, "", fail), nil
}

func (s *Server) startLifecycle(accountID, name, projectID string, fail bool) Media {
	now := s.cfg.Now().UTC().Truncate(time.Second)
	if strings.TrimSpace(name) == "" {
		name = "Untitled upload " + now.Format("15:04:05")
	}
	s.mu.Lock()
	proj := Project{ID: stableID("uploads", accountID), Name: "Uploads"}
	for _, id := range s.order {
		if m := s.medias[id]; m != nil && m.AccountID == accountID && (projectID == "" || m.Project.ID == projectID) {
			proj = m.Project
			break
		}
	}
	id := randomMediaID()
	for s.medias[id] != nil {
		id = randomMediaID()
	}
	m := &Media{HashedID: id, AccountID: accountID, Name: name, Duration: float64(30+len(name)*7%600) + 0.48,
		Project: proj, Status: "queued", Created: now, Updated: now}
	s.medias[id] = m
	s.order = append(s.order, id)
	cp := *m
	s.mu.Unlock()
	s.cfg.Logf("media %s created in account %s (%q)", id, accountID, name)
	pj := &catalog.Project{ID: proj.ID, Name: proj.Name}
	s.emit(catalog.TypeMediaCreated, accountID, &catalog.MediaCreated{Media: s.catalogMedia(&cp), Project: pj})
	s.spawn(func() {
		if !s.sleep(s.processingDelay()) {
			return
		}
		cur := s.setStatus(id, "processing")
		if cur == nil {
			return
		}
		s.emit(catalog.TypeMediaProcessing, accountID, &catalog.MediaProcessing{Media: s.catalogMedia(cur), Project: pj})
		if !s.sleep(s.processingDelay()) {
			return
		}
		if fail {
			if cur = s.setStatus(id, "failed"); cur != nil {
				s.emit(catalog.TypeMediaFailed, accountID, &catalog.MediaFailed{Media: s.catalogMedia(cur)})
			}
			return
		}
		if cur = s.setStatus(id, "ready"); cur != nil {
			s.emit(catalog.TypeMediaReady, accountID, &catalog.MediaReady{Media: s.catalogMedia(cur)})
		}
	})
	return cp
}

func (s *Server) processingDelay() time.Duration {
	if s.cfg.ProcessingDelay > 0 {
		return s.cfg.ProcessingDelay
	}
	return 2 * time.Second
}

func (s *Server) setStatus(id, status string) *Media {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.medias[id]
	if m == nil {
		return nil // deleted meanwhile
	}
	m.Status = status
	m.Updated = s.cfg.Now().UTC().Truncate(time.Second)
	cp := *m
	return &cp
}

func randomMediaID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte(randomHex(10))
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:10])
}

// handleIndex is a human page listing what the sandbox offers.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	var b strings.Builder
	b.WriteString(`<h1>Service sandbox</h1><p class="muted">A local emulation of the video service. Base URL and auth URL: <code>` + htmlEsc(base) + `</code></p><h2>Applications</h2>`)
	for _, a := range s.appList {
		fmt.Fprintf(&b, `<p><strong>%s</strong> · client_id <code>%s</code> · client_secret <code>%s</code> (a demo credential of this sandbox) · redirect URI <code>%s</code> · scopes <code>%s</code><br><a href="%s">Link to authorization code</a></p>`,
			htmlEsc(a.Name), htmlEsc(a.ClientID), htmlEsc(a.ClientSecret), htmlEsc(a.RedirectURI), htmlEsc(strings.Join(a.Scopes, " ")),
			htmlEsc(AuthorizeURL(base, a, nil)))
	}
	b.WriteString(`<h2>Demo users</h2><table><tr><th>Email</th><th>Password</th><th>Accounts</th></tr>`)
	for _, u := range s.users {
		var accts []string
		for _, m := range u.Memberships {
			accts = append(accts, fmt.Sprintf("%s %s (%s)", m.Account.Name, m.Account.ID, m.Role))
		}
		fmt.Fprintf(&b, `<tr><td><code>%s</code></td><td><code>%s</code></td><td>%s</td></tr>`, htmlEsc(u.Email), htmlEsc(u.Password), htmlEsc(strings.Join(accts, ", ")))
	}
	b.WriteString(`</table><h2>Medias</h2><table><tr><th>Hashed id</th><th>Name</th><th>Account</th><th>Status</th></tr>`)
	for _, m := range s.Medias() {
		fmt.Fprintf(&b, `<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>`, htmlEsc(m.HashedID), htmlEsc(m.Name), htmlEsc(m.AccountID), htmlEsc(m.Status))
	}
	fmt.Fprintf(&b, `</table><h2>Endpoints</h2><ul><li><code>GET /oauth/authorize</code>, <code>POST /oauth/token</code> (inputs in the query)</li><li><code>GET /v1/medias</code>, <code>GET|PUT|DELETE /v1/medias/&lt;hashed_id&gt;</code></li><li><code>POST /upload?access_token=…</code> (Upload API: query token only)</li><li><code>POST /sandbox/lifecycle?account_id=…&amp;name=…</code> runs a media through created → processing → ready</li><li><code>POST /sandbox/events?type=…&amp;media_id=…</code> sends one simulated event of any type about a sandbox media</li><li><code>POST /sandbox/revoke?client_id=…&amp;account_id=…</code> revokes an app's access, as the account settings screen does</li><li><a href="/sandbox/logout">/sandbox/logout</a> ends your login session in this browser</li></ul><p class="muted">Webhooks: %s</p>`,
		htmlEsc(s.webhookSummary()))
	s.renderRaw(w, "index", "Service sandbox", b.String())
}

func htmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

func (s *Server) webhookSummary() string {
	if s.hooks == nil {
		return "off (no webhook URL configured)"
	}
	mode := "one event per message, in order"
	if s.cfg.AtLeastOnce {
		mode = "at-least-once: batching, duplicates, out-of-order"
	}
	return "to " + redact.URL(s.cfg.WebhookURL) + " (" + mode + ")"
}
