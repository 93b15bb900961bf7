package sandbox

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
)

// PageHeader tells a program driving the authorization pages which page it
// got: login, accounts, consent, error or index.
const PageHeader = "X-Sandbox-Page"

const layoutHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Service sandbox</title>
<style>
:root{--ink:#1d2330;--muted:#5d6778;--line:#dfe3ea;--bg:#f4f6f9;--accent:#2f5bea;--bad:#c0392b;--ok:#1e8e5a}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.banner{background:#fff3cd;color:#6b5200;text-align:center;font-size:13px;padding:6px;border-bottom:1px solid #f0dc9a}
main{max-width:560px;margin:40px auto;padding:0 16px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:28px;box-shadow:0 1px 3px rgba(0,0,0,.04)}
h1{font-size:22px;margin:0 0 6px}h2{font-size:15px;margin:22px 0 8px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
p{margin:8px 0}.muted{color:var(--muted)}
label{display:block;font-weight:600;margin:14px 0 4px}
input[type=email],input[type=password],input[type=text]{width:100%;padding:10px;border:1px solid var(--line);border-radius:6px;font:inherit}
button{font:inherit;padding:10px 18px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;margin-top:16px}
button.secondary{background:#fff;color:var(--ink);border-color:var(--line)}button.link{background:none;border:none;color:var(--accent);padding:0;margin:0}
.row{display:flex;gap:10px;flex-wrap:wrap}
.error{background:#fdecea;border:1px solid #f5c2bd;color:var(--bad);border-radius:6px;padding:10px 12px;margin:12px 0}
table{border-collapse:collapse;width:100%;font-size:14px}td,th{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f0f2f6;padding:1px 4px;border-radius:4px;word-break:break-all}
ul.scopes{padding-left:0;list-style:none}ul.scopes li{padding:8px 0;border-bottom:1px solid var(--line)}
.acct{display:block;border:1px solid var(--line);border-radius:8px;padding:12px;margin:8px 0;width:100%;text-align:left;background:#fff;color:var(--ink)}
.note{background:#eef3ff;border:1px solid #c9d6fb;border-radius:6px;padding:10px 12px;font-size:14px}
.acct:hover{border-color:var(--accent)}.who{font-size:13px;color:var(--muted);margin-top:18px}
</style></head>
<body><div class="banner">Sandbox: a local emulation of the video service for development. Credentials shown here are demo values.</div>
<main><div class="card">{{template "body" .}}</div></main></body></html>`

// pageTemplates returns the body template of each page.
func pageTemplates() map[string]string {
	return map[string]string{
		"login": `{{define "body"}}
<h1>Log in</h1>
<p class="muted"><strong>{{.App.Name}}</strong> wants to connect to your account. Log in to continue.</p>
{{if .Error}}<p class="error" id="message">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="action" value="login"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="email">Email</label><input id="email" type="email" name="email" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form>
<h2>Demo users</h2>
<table><tr><th>Email</th><th>Password</th><th>Accounts</th></tr>
{{range .Users}}<tr><td><code>{{.Email}}</code></td><td><code>{{.Password}}</code></td><td>{{range $i, $m := .Memberships}}{{if $i}}, {{end}}{{$m.Account.Name}} ({{$m.Role}}){{end}}</td></tr>{{end}}
</table>
<p class="muted">Only account managers and owners can authorize an application; the viewer shows what a refusal looks like.</p>
{{end}}`,
		"accounts": `{{define "body"}}
<h1>Choose an account</h1>
<p class="muted">You belong to several accounts. Which one should <strong>{{.App.Name}}</strong> connect to?</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="action" value="pick"><input type="hidden" name="csrf" value="{{.CSRF}}">
{{range .User.Memberships}}<button class="acct" type="submit" name="account_id" value="{{.Account.ID}}"><strong>{{.Account.Name}}</strong><br><span class="muted">{{.Account.URL}} · {{.Role}}</span></button>{{end}}
</form>
{{template "who" .}}{{end}}`,
		"consent": `{{define "body"}}
<h1>Authorize {{.App.Name}}?</h1>
<p>{{.App.Description}}</p>
<p class="muted">It will act on behalf of <strong>{{.User.Name}}</strong> in the account <strong>{{.Account.Name}}</strong>.</p>
<h2>Permissions requested</h2>
<ul class="scopes">{{range .Scopes}}<li><code>{{.Name}}</code><br><span class="muted">{{.Meaning}}</span></li>{{end}}</ul>
{{if .Note}}<p class="note" id="note">{{.Note}}</p>{{end}}
<p class="muted">After you choose, you will be sent to <code>{{.RedirectHost}}</code>.</p>
<form method="post" action="{{.Action}}" class="row">
<input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="account_id" value="{{.Account.ID}}">
<button type="submit" name="action" value="approve">Authorize</button>
<button type="submit" name="action" value="deny" class="secondary">Deny</button>
</form>
{{template "who" .}}{{end}}`,
		"raw": `{{define "body"}}{{.Raw}}{{end}}`,
		"error": `{{define "body"}}
<h1>{{.Title}}</h1>
<p class="error" id="message">{{.Error}}</p>
{{if .Details}}<table>{{range .Details}}<tr><th>{{index . 0}}</th><td><code>{{index . 1}}</code></td></tr>{{end}}</table>{{end}}
{{if .Hints}}<h2>Why this may have happened</h2><ul>{{range .Hints}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}`,
	}
}

const whoHTML = `{{define "who"}}<form method="post" action="{{.Action}}" class="who">Logged in as {{.User.Name}} ({{.User.Email}}) ·
<input type="hidden" name="action" value="logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button class="link" type="submit">Log out</button></form>{{end}}`

// templates is built once per Server; it is immutable afterwards.
type templates map[string]*template.Template

func parseTemplates() templates {
	t := templates{}
	for name, body := range pageTemplates() {
		t[name] = template.Must(template.Must(template.Must(template.New("layout").Parse(layoutHTML)).Parse(whoHTML)).Parse(body))
	}
	return t
}

type scopeView struct{ Name, Meaning string }

type pageData struct {
	Title        string
	App          App
	Action       string
	CSRF         string
	Error        string
	Users        []User
	User         *User
	Account      Account
	Scopes       []scopeView
	RedirectHost string
	Details      [][2]string
	Hints        []string
	Raw          template.HTML
	Note         string
}

func (s *Server) render(w http.ResponseWriter, page string, status int, d pageData) {
	s.renderAs(w, page, page, status, d)
}

// renderAs executes template tmpl and labels the response as page.
func (s *Server) renderAs(w http.ResponseWriter, tmpl, page string, status int, d pageData) {
	var buf bytes.Buffer
	if err := s.tmpl[tmpl].Execute(&buf, d); err != nil {
		// The templates are fixed; failing here is a programming error.
		s.cfg.Logf("sandbox: render %s: %v", page, err)
		http.Error(w, "page rendering failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set(PageHeader, page)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) renderError(w http.ResponseWriter, e *pageError) {
	s.cfg.Logf("authorize: error page: %s", e.title)
	s.render(w, "error", e.status, pageData{Title: e.title, Error: e.message, Details: e.details, Hints: e.hints})
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, req *authRequest, status int, msg string) {
	s.render(w, "login", status, pageData{Title: "Log in", App: req.app, Action: req.action, CSRF: s.loginToken(w, r), Error: msg, Users: s.users})
}

func (s *Server) renderAccounts(w http.ResponseWriter, req *authRequest, u *User, sess *session) {
	s.render(w, "accounts", http.StatusOK, pageData{Title: "Choose an account", App: req.app, Action: req.action, CSRF: sess.csrf, User: u})
}

func (s *Server) renderConsent(w http.ResponseWriter, req *authRequest, u *User, m *Membership, sess *session) {
	d := pageData{Title: "Authorize " + req.app.Name, App: req.app, Action: req.action, CSRF: sess.csrf, User: u, Account: m.Account}
	for _, sc := range req.app.Scopes {
		d.Scopes = append(d.Scopes, scopeView{sc, ScopeMeaning(sc)})
	}
	if req.scopeParam != "" {
		d.Note = "The authorization link carries scope=" + req.scopeParam + ". The service does not read it: the permissions are the ones registered for the application (listed above). Change them in the application's settings."
		w.Header().Set("X-Sandbox-Note", "the scope parameter is ignored; permissions come from the application's registration")
	}
	d.RedirectHost = req.redirectURI
	if ru, err := url.Parse(req.redirectURI); err == nil {
		d.RedirectHost = ru.Scheme + "://" + ru.Host + ru.Path
	}
	s.render(w, "consent", http.StatusOK, d)
}

// renderRaw shows already-escaped HTML inside the layout.
func (s *Server) renderRaw(w http.ResponseWriter, page, title, body string) {
	s.renderAs(w, "raw", page, http.StatusOK, pageData{Title: title, Raw: template.HTML(body)}) //nolint:gosec // body is built with htmlEsc
}
