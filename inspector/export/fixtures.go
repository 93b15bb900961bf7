package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// Fixture is one file of a fixtures folder: a single-event delivery as a
// consumer's test suite replays it. Body is the exact string to POST;
// Headers include the signature computed with the secret chosen at export
// (the secret itself is in no file).
type Fixture struct {
	Description string         `json:"description"`
	Type        string         `json:"type"`
	EventUUID   string         `json:"event_uuid"`
	Method      string         `json:"method"`
	Path        string         `json:"path"`
	Headers     FixtureHeaders `json:"headers"`
	Body        string         `json:"body"`
	// Message is Body parsed, for reading and for assertions.
	Message json.RawMessage `json:"message"`
}

// FixtureHeaders are the delivery headers of spec 4.3, in the service's order.
type FixtureHeaders struct {
	UserAgent     string `json:"User-Agent"`
	Signature     string `json:"X-Service-Signature"`
	ContentType   string `json:"Content-Type"`
	ContentLength string `json:"Content-Length"`
}

// fixtureName is the file of one event type.
func fixtureName(typ string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, typ)
	if safe == "" || strings.HasPrefix(safe, ".") {
		safe = "_" + safe
	}
	return safe + ".json"
}

func writeFixtures(opts Options, recs []*inspector.Record, sum *Summary) error {
	type pick struct {
		fx   Fixture
		from int64
	}
	picked := map[string]*pick{}
	wantType := set(opts.Types)
	wantUUID := set(opts.EventUUIDs)
	for _, r := range recs {
		d := r.Delivery
		m, err := inspector.DecodeMessage(d.Body)
		if err != nil {
			sum.Skipped = append(sum.Skipped, fmt.Sprintf("delivery %d: not a webhook message (%v)", d.ID, err))
			continue
		}
		for _, ev := range m.Events {
			if ev.Type == "" || picked[ev.Type] != nil ||
				len(wantType) > 0 && !wantType[ev.Type] || len(wantUUID) > 0 && !wantUUID[ev.UUID] {
				continue
			}
			body := d.Body
			if len(m.Events) > 1 {
				// One event per fixture: a batch is split, keeping the
				// event's bytes; the hook uuid is derived so it is new but
				// stable across exports.
				h := sha256.Sum256([]byte(m.HookUUID + "/" + ev.UUID))
				body = singleEventBody(hex.EncodeToString(h[:16]), ev.Raw)
			}
			ua, _ := d.Header("User-Agent")
			if ua == "" {
				ua = catalog.UserAgentPrefix + catalog.CurrentSenderVersion
			}
			picked[ev.Type] = &pick{from: d.ID, fx: Fixture{
				Description: fmt.Sprintf("%s delivery exported by Hookscope from delivery %d; signed with the secret chosen at export", ev.Type, d.ID),
				Type:        ev.Type, EventUUID: ev.UUID, Method: "POST", Path: "/webhooks",
				Headers: FixtureHeaders{UserAgent: ua, Signature: inspector.Sign(opts.Secret, body),
					ContentType: "application/json", ContentLength: strconv.Itoa(len(body))},
				// DecodeMessage accepted body, so it is JSON; the file's
				// layout (marshalPretty) indents it.
				Body: string(body), Message: json.RawMessage(body),
			}}
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("no event in the selection to make a fixture of")
	}
	types := slices.Sorted(maps.Keys(picked))
	for _, t := range types {
		b, err := marshalPretty(picked[t].fx)
		if err != nil {
			return fmt.Errorf("fixture %s: %w", t, err)
		}
		if err := writeInto(sum, opts.Out, fixtureName(t), b, fileMode); err != nil {
			return err
		}
	}
	var missing []string
	for _, ti := range catalog.Types() {
		if picked[ti.Name] == nil && (len(wantType) == 0 || wantType[ti.Name]) && len(wantUUID) == 0 {
			missing = append(missing, ti.Name)
		}
	}
	if len(missing) > 0 {
		sum.Skipped = append(sum.Skipped, "no event in the selection for: "+strings.Join(missing, ", "))
	}
	return writeInto(sum, opts.Out, "README.md", fixturesReadme(types, missing), fileMode)
}

func set(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// singleEventBody builds a one-event message around an event's exact bytes.
func singleEventBody(hook string, raw json.RawMessage) []byte {
	q, _ := json.Marshal(hook)
	var b bytes.Buffer
	b.WriteString(`{"hook":{"uuid":`)
	b.Write(q)
	b.WriteString(`},"events":[`)
	b.Write(raw)
	b.WriteString("]}")
	return b.Bytes()
}

func fixturesReadme(types, missing []string) []byte {
	var b strings.Builder
	b.WriteString("# Webhook fixtures\n\nExported by Hookscope: one file per event type, each a complete delivery of the\nvideo service's webhooks that your consumer's tests can POST to the handler.\n\n")
	b.WriteString("| File | Event type |\n|---|---|\n")
	for _, t := range types {
		fmt.Fprintf(&b, "| `%s` | %s |\n", fixtureName(t), t)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNot covered by the exported selection: %s.\n", strings.Join(missing, ", "))
	}
	b.WriteString(`
## Format

` + "```json" + `
{
  "description": "…",
  "type": "media.created",
  "event_uuid": "…",
  "method": "POST",
  "path": "/webhooks",
  "headers": {
    "User-Agent": "Service-Webhooks/0.0.47",
    "X-Service-Signature": "<HMAC-SHA256 hex of body>",
    "Content-Type": "application/json",
    "Content-Length": "<bytes in body>"
  },
  "body": "<the exact request body, as a string>",
  "message": { "…": "body parsed, for assertions" }
}
` + "```" + `

Send ` + "`body`" + ` exactly as it is (not ` + "`message`" + ` re-serialised): the signature is
computed over these bytes.

## The secret

The signatures were computed with the secret given to ` + "`hookscope export --secret`" + `.
That secret is not written in any of these files. Configure your test
environment's webhook secret with the same value, for example from an
environment variable ` + "`WEBHOOK_SECRET`" + `.

## Loading

Go:

` + "```go" + `
var fx struct {
	Headers map[string]string ` + "`json:\"headers\"`" + `
	Body    string            ` + "`json:\"body\"`" + `
}
b, _ := os.ReadFile("testdata/fixtures/media.created.json")
json.Unmarshal(b, &fx)
req := httptest.NewRequest("POST", "/webhooks", strings.NewReader(fx.Body))
for k, v := range fx.Headers {
	req.Header.Set(k, v)
}
` + "```" + `

Node (Jest, supertest):

` + "```js" + `
const fx = require("./fixtures/media.created.json");
await request(app).post("/webhooks").set(fx.headers).send(fx.body);
` + "```" + `

Python (pytest, Flask/Django test client):

` + "```python" + `
fx = json.load(open("fixtures/media.created.json"))
client.post("/webhooks", data=fx["body"].encode(), headers=fx["headers"])
` + "```" + `

A consumer that verifies signatures must accept every fixture when its secret
is the one used at export, and refuse them with any other secret.
`)
	return []byte(b.String())
}

// readFixture reads one fixture file as a delivery; nil and why not when
// it is not one.
func readFixture(data []byte) (*inspector.Delivery, string) {
	var fx struct {
		Method  string          `json:"method"`
		Path    string          `json:"path"`
		Headers json.RawMessage `json:"headers"`
		Body    *string         `json:"body"`
	}
	if err := json.Unmarshal(data, &fx); err != nil || fx.Body == nil || len(fx.Headers) == 0 {
		return nil, "neither a fixture (headers and a body string) nor a delivery of the json export"
	}
	hs, err := orderedStrings(fx.Headers)
	if err != nil {
		return nil, fmt.Sprintf("headers: %v", err)
	}
	d := &inspector.Delivery{Method: "POST", Path: fx.Path, Headers: hs, Body: []byte(*fx.Body),
		BodyLength: int64(len(*fx.Body)), RemoteAddr: "import", Status: 200}
	if fx.Method != "" {
		d.Method = strings.ToUpper(fx.Method)
	}
	if d.Path == "" {
		d.Path = "/webhooks"
	}
	return d, ""
}

// orderedStrings reads a JSON object of strings keeping its key order,
// which encoding/json's maps would lose.
func orderedStrings(raw json.RawMessage) ([]inspector.Header, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	hs := []inspector.Header{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("header %v: the value must be a string", k)
		}
		hs = append(hs, inspector.Header{Name: k.(string), Value: v})
	}
	return hs, nil
}
