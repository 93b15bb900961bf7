// Package mcp is `hookscope mcp`: a Model Context Protocol server over
// stdio, so a developer's coding agent can look at what the service sent
// while it fixes the handler. Each tool calls the same function as the
// command it mirrors (list.Find, show.Load, resends.Observe,
// forwardagain.Send, send.Post; replay.Replayer.Replay and export.Export,
// which replay's and export's run functions call; the store's OAuth
// profiles); no secret or token value is ever returned.
package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/forwardagain"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/cli/resends"
	"github.com/hookscope/hookscope/cli/send"
	"github.com/hookscope/hookscope/cli/show"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/replay"
	observatory "github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # run by your coding agent (docs/agents.md has each agent's configuration)
  hookscope mcp
  hookscope mcp --db ~/work/hooks.db`

// Options are mcp's flags.
type Options struct {
	Env    *cmdutil.Env
	DBPath string
}

// NewCmd builds `hookscope mcp`; runF replaces the serving in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "mcp [--db PATH]",
		Short: "Serve the deliveries to a coding agent (Model Context Protocol over stdio)",
		Long: `Serve Hookscope to a coding agent over the Model Context Protocol (stdio):
list and show deliveries, a message's re-send timeline, replay, forward
again, export, send test deliveries, and the OAuth profiles' token expiry.
The agent starts it; docs/agents.md shows the set-up for Claude Code,
Cursor, VS Code and Codex CLI. It reads and writes the same store as the
window and listen. Secrets and tokens are never returned; re-signing takes
the name of an environment variable of this process, not a secret.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, func([]string) error { return nil }, runF, run),
	}
	cmdutil.AddDBFlag(cmd.Flags(), &o.DBPath)
	return cmd
}

func run(ctx context.Context, o *Options) error {
	s := NewServer(o.DBPath, o.Env)
	defer s.Close()
	if err := s.Server.Run(ctx, &sdk.StdioTransport{}); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// Server is the MCP server with its store, opened on the first tool that
// needs it (an agent may start before anything was received).
type Server struct {
	Server *sdk.Server
	path   string
	env    *cmdutil.Env

	mu sync.Mutex
	db *storage.DB
}

// NewServer builds the server on the store at path ("" is the default
// store); env gives the version and the environment variables re-signing
// reads.
func NewServer(path string, env *cmdutil.Env) *Server {
	s := &Server{path: path, env: cmdutil.WithDefaults(env, "dev")}
	s.Server = sdk.NewServer(&sdk.Implementation{Name: "hookscope", Version: s.env.Version}, &sdk.ServerOptions{
		Instructions: "Hookscope stores the video service's webhook deliveries. Find them with list_deliveries (a CEL expression over delivery, events and now; see the tool's description), read one with show_delivery, see how the service re-sent a message with resend_timeline, and send deliveries to the app under development with replay or forward_again.",
	})
	s.tools()
	return s
}

// Close closes the store.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

func (s *Server) store() (*storage.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		return s.db, nil
	}
	db, err := cmdutil.OpenExistingStore(nil, s.path)
	if err != nil {
		return nil, err
	}
	s.db = db
	return db, nil
}

// result is a tool's answer as JSON text.
func result(v any) (*sdk.CallToolResult, any, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
}

// whereHelp is the expression language in the words an agent needs.
const whereHelp = `where is a CEL expression over delivery (id, received_at, method, path, query, headers (lower-case names), header_values, size, body, signature ("valid", "invalid", "missing", "unverified", "pending"), status, answer, hook_uuid, source, resend, decode_error, problems, forward (list of {route, status, outcome, attempts, final})), events (list of {index, type, uuid, generated_at, account_id, payload, metadata, problems, summary, dedupe ("first", "duplicate", "divergent")}) and now. Examples: events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail)); delivery.signature == "invalid" && delivery.received_at > now - duration("2h").`

// ListIn is list_deliveries' input.
type ListIn struct {
	Where string `json:"where,omitempty" jsonschema:"a CEL expression selecting deliveries; empty for all"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many, newest first (default 20)"`
}

// ShowIn is show_delivery's input.
type ShowIn struct {
	ID int64 `json:"id" jsonschema:"the delivery id"`
}

// TimelineIn is resend_timeline's input.
type TimelineIn struct {
	HookUUID string `json:"hook_uuid,omitempty" jsonschema:"the message's hook uuid; empty for every re-sent message"`
	Where    string `json:"where,omitempty" jsonschema:"only messages with a delivery this CEL expression selects"`
}

// ReplayIn is replay's input.
type ReplayIn struct {
	IDs    []int64 `json:"ids" jsonschema:"the delivery ids to send again"`
	Target string  `json:"target" jsonschema:"the URL to send to (the app under development)"`
	// ResignSecretEnv names an environment variable of the server.
	ResignSecretEnv string `json:"resign_secret_env,omitempty" jsonschema:"name of an environment variable of the hookscope mcp process holding the development secret to re-sign with (the secret itself is never passed)"`
}

// ForwardIn is forward_again's input.
type ForwardIn struct {
	IDs   []int64 `json:"ids" jsonschema:"the delivery ids to forward again"`
	Route string  `json:"route,omitempty" jsonschema:"one of the store's forward routes; empty for every route a delivery matches"`
	To    string  `json:"to,omitempty" jsonschema:"a URL to send to instead of the store's routes"`
}

// ExportIn is export's input.
type ExportIn struct {
	Where  string `json:"where,omitempty" jsonschema:"a CEL expression selecting deliveries; empty for all"`
	Format string `json:"format" jsonschema:"json, fixtures, curl, har or ndjson"`
	Path   string `json:"path" jsonschema:"the file (har, ndjson) or folder (json, fixtures, curl) to write; it must not exist yet"`
	// SecretEnv signs fixtures.
	SecretEnv string `json:"secret_env,omitempty" jsonschema:"for fixtures: name of an environment variable of the hookscope mcp process holding the secret to sign them with"`
}

// SendIn is send_test_deliveries' input.
type SendIn struct {
	To        string   `json:"to" jsonschema:"the consumer URL to POST to"`
	Types     []string `json:"types,omitempty" jsonschema:"event types to send, one message each (default: every type)"`
	SecretEnv string   `json:"secret_env,omitempty" jsonschema:"name of an environment variable of the hookscope mcp process holding the webhook secret to sign with"`
	Seed      int64    `json:"seed,omitempty" jsonschema:"seed for the generated values (0: random)"`
}

// OAuthIn is oauth_status' input.
type OAuthIn struct {
	Profile string `json:"profile,omitempty" jsonschema:"one profile's name; empty for all"`
}

func (s *Server) tools() {
	sdk.AddTool(s.Server, &sdk.Tool{Name: "list_deliveries", Description: "List stored webhook deliveries, newest first. " + whereHelp}, s.list)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "show_delivery", Description: "Show one stored delivery: the request (credential headers redacted), the body, the signature verdict, each event with its dedupe verdict and contract problems, and its forward attempts."}, s.show)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "resend_timeline", Description: "The service's attempts at a message (hook uuid): when each arrived, what it was answered and the gap since the previous one; and the re-send schedule learned across messages."}, s.timeline)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "replay", Description: "Send stored deliveries again to a URL, byte-exact or re-signed; each send is recorded with its delivery."}, s.replay)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "forward_again", Description: "Forward stored deliveries to the app once more, on the store's forward routes or to a URL; recorded as the window's Forward again."}, s.forwardAgain)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "export", Description: "Write stored deliveries to a file or folder: json, fixtures (signed test fixtures), curl, har or ndjson. Credentials are redacted. " + whereHelp}, s.export)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "send_test_deliveries", Description: "POST generated webhook messages, as the service sends them, to a consumer URL, signed when a secret is named."}, s.send)
	sdk.AddTool(s.Server, &sdk.Tool{Name: "oauth_status", Description: "The OAuth profiles and their tokens' expiry and scopes; never a secret or token value."}, s.oauth)
}

func (s *Server) list(ctx context.Context, _ *sdk.CallToolRequest, in ListIn) (*sdk.CallToolResult, any, error) {
	e, err := readstore.Where(in.Where)
	if err != nil {
		return nil, nil, err
	}
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	res, err := list.Find(ctx, db, e, cmp.Or(max(in.Limit, 0), list.DefaultLimit), time.Now())
	if err != nil {
		return nil, nil, err
	}
	out := struct {
		Deliveries []list.Row `json:"deliveries"`
		Failed     int        `json:"could_not_check,omitempty"`
		Failure    string     `json:"first_failure,omitempty"`
	}{Deliveries: res.Rows, Failed: res.Stats.Failed}
	if res.Stats.FirstFailure != nil {
		out.Failure = res.Stats.FirstFailure.Error()
	}
	return result(out)
}

func (s *Server) show(ctx context.Context, _ *sdk.CallToolRequest, in ShowIn) (*sdk.CallToolResult, any, error) {
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	d, err := show.Load(ctx, db, in.ID, false)
	if err != nil {
		return nil, nil, err
	}
	return result(d)
}

func (s *Server) timeline(ctx context.Context, _ *sdk.CallToolRequest, in TimelineIn) (*sdk.CallToolResult, any, error) {
	e, err := readstore.Where(in.Where)
	if err != nil {
		return nil, nil, err
	}
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	var hooks []string
	if in.HookUUID != "" {
		hooks = []string{in.HookUUID}
	}
	rep, err := resends.Observe(ctx, db, e, hooks, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if in.HookUUID == "" {
		// Every message would be long: the re-sent ones tell the story.
		rep.Timelines = slices.DeleteFunc(rep.Timelines, func(t observatory.Timeline) bool { return len(t.Attempts) < 2 })
	}
	return result(rep)
}

func (s *Server) secretFrom(name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	v := s.env.Getenv(name)
	if v == "" {
		return nil, fmt.Errorf("the environment variable %s is unset or empty in the hookscope mcp process", name)
	}
	return []byte(v), nil
}

func (s *Server) replay(ctx context.Context, _ *sdk.CallToolRequest, in ReplayIn) (*sdk.CallToolResult, any, error) {
	if len(in.IDs) == 0 || in.Target == "" {
		return nil, nil, errors.New("give ids and target")
	}
	if _, err := replay.ParseTarget(in.Target); err != nil {
		return nil, nil, err
	}
	secret, err := s.secretFrom(in.ResignSecretEnv)
	if err != nil {
		return nil, nil, err
	}
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	r := replay.New(db)
	var out []*replay.Result
	for _, id := range in.IDs {
		rec, err := db.Get(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		res, err := r.Replay(ctx, rec.Delivery, replay.Options{Target: in.Target, Secret: secret})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, res)
	}
	if _, err := replay.RememberTarget(ctx, db, in.Target); err != nil {
		return nil, nil, err
	}
	return result(out)
}

func (s *Server) forwardAgain(ctx context.Context, _ *sdk.CallToolRequest, in ForwardIn) (*sdk.CallToolResult, any, error) {
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	as, err := forwardagain.Send(ctx, db, forwardagain.Request{IDs: in.IDs, Route: in.Route, To: in.To, Timeout: forward.DefaultTimeout})
	if err != nil {
		return nil, nil, err
	}
	return result(as)
}

func (s *Server) export(ctx context.Context, _ *sdk.CallToolRequest, in ExportIn) (*sdk.CallToolResult, any, error) {
	f, err := export.ParseFormat(in.Format)
	if err != nil {
		return nil, nil, err
	}
	if in.Path == "" || in.Path == "-" {
		return nil, nil, errors.New("give the path of a file or folder to write")
	}
	e, err := readstore.Where(in.Where)
	if err != nil {
		return nil, nil, err
	}
	secret, err := s.secretFrom(in.SecretEnv)
	if err != nil {
		return nil, nil, err
	}
	if f == export.Fixtures && secret == nil {
		return nil, nil, errors.New("fixtures are signed: name the environment variable holding the secret in secret_env")
	}
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	src := export.SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) error {
		_, err := db.EachWhere(ctx, storage.Filter{}, e, now, fn)
		return err
	})
	sum, err := export.Export(ctx, src, export.Options{Format: f, Out: in.Path, Secret: secret, Version: s.env.Version, Target: export.DefaultTarget})
	if err != nil {
		return nil, nil, err
	}
	return result(sum)
}

func (s *Server) send(ctx context.Context, _ *sdk.CallToolRequest, in SendIn) (*sdk.CallToolResult, any, error) {
	if in.To == "" {
		return nil, nil, errors.New("give the consumer URL in to")
	}
	types := in.Types
	if len(types) == 0 {
		types = catalog.TypeNames()
	}
	for _, t := range types {
		if !slices.Contains(catalog.TypeNames(), t) {
			return nil, nil, fmt.Errorf("unknown event type %q; the types are %s", t, strings.Join(catalog.TypeNames(), ", "))
		}
	}
	secret, err := s.secretFrom(in.SecretEnv)
	if err != nil {
		return nil, nil, err
	}
	g := simulate.New(in.Seed)
	msgs := make([]simulate.Message, len(types))
	for i, t := range types {
		msgs[i] = g.Message(g.Event(t))
	}
	// The same sender as hookscope send, the window and the sandbox.
	rep := simulate.Send(ctx, in.To, simulate.SignedWith(secret, msgs...), simulate.SendOptions{})
	if rep.Unreachable != nil {
		return nil, nil, rep.Unreachable
	}
	out := make([]send.Line, len(rep.Answers))
	for i, a := range rep.Answers {
		out[i] = send.LineOf(a)
	}
	return result(out)
}

// ProfileStatus is one OAuth profile without its secrets.
type ProfileStatus struct {
	Name        string    `json:"name"`
	BaseURL     string    `json:"base_url"`
	ClientID    string    `json:"client_id"`
	RedirectURI string    `json:"redirect_uri"`
	HasSecret   bool      `json:"has_client_secret"`
	Token       string    `json:"token"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Scopes      []string  `json:"granted_scopes,omitempty"`
	Refreshable bool      `json:"refreshable"`
}

func (s *Server) oauth(ctx context.Context, _ *sdk.CallToolRequest, in OAuthIn) (*sdk.CallToolResult, any, error) {
	db, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	ps, err := db.ListProfiles(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	out := []ProfileStatus{}
	for _, p := range ps {
		if in.Profile != "" && p.Name != in.Profile {
			continue
		}
		st := ProfileStatus{Name: p.Name, BaseURL: p.BaseURL, ClientID: p.ClientID, RedirectURI: p.RedirectURI, HasSecret: p.ClientSecret != "", Token: "none"}
		tok, err := db.LoadToken(ctx, p.Name)
		switch {
		case errors.Is(err, oauthflow.ErrNotFound):
		case err != nil:
			return nil, nil, err
		case tok.AccessToken != "":
			st.Token, st.ExpiresAt, st.Scopes, st.Refreshable = "valid", tok.ExpiresAt, tok.Scope, tok.RefreshToken != ""
			if tok.Expired(now) {
				st.Token = "expired"
			}
		}
		out = append(out, st)
	}
	if in.Profile != "" && len(out) == 0 {
		return nil, nil, fmt.Errorf("no OAuth profile %q", in.Profile)
	}
	return result(out)
}
