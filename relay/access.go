package relay

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// DefaultStream and DefaultSubject name the relay's stream and the one
// subject its receipts are published on.
const (
	DefaultStream  = "HOOKSCOPE"
	DefaultSubject = "hookscope.deliveries"
)

// adminSubject is where a running relay takes "read the credentials file
// again" from the invite and revoke commands (the relay's own user only).
const adminSubject = "hookscope.relay.admin.reload"

// nameRE is what a credential's name may be: it names a NATS consumer and
// appears in subjects, so no dots, wildcards, spaces or underscores (the
// underscore separates the name from its pull consumer's suffix).
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// CheckName says what is wrong with a credential's name, or nil.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q cannot name a credential: use 1 to 32 lower-case letters, digits or '-', starting with a letter or digit (e.g. alice, ci-main)", name)
	}
	return nil
}

// pullConsumer is the name of the ephemeral consumer `hookscope pull`
// reads through with name's credential: one at a time per credential.
func pullConsumer(name string) string { return name + "_pull" }

// inboxPrefix is name's own reply subjects: a laptop cannot subscribe to
// another laptop's replies.
func inboxPrefix(name string) string { return "_INBOX_" + name }

// Permissions returns the NATS permissions of name's credential on
// stream: read the stream's info, create, read, reset and acknowledge its
// own durable consumer (named name) and its pull consumer, and receive
// replies on its own inbox; nothing else (no publishing into the stream,
// no other consumer). An existing NATS deployment gives its users these.
func Permissions(stream, name string) *server.Permissions {
	api := "$JS.API."
	pub := []string{api + "INFO", api + "STREAM.INFO." + stream}
	for _, c := range []string{name, pullConsumer(name)} {
		pub = append(pub,
			api+"CONSUMER.CREATE."+stream+"."+c,
			api+"CONSUMER.CREATE."+stream+"."+c+".>",
			api+"CONSUMER.INFO."+stream+"."+c,
			api+"CONSUMER.MSG.NEXT."+stream+"."+c,
			api+"CONSUMER.RESET."+stream+"."+c,
			"$JS.ACK."+stream+"."+c+".>",
		)
	}
	pub = append(pub, api+"CONSUMER.DELETE."+stream+"."+pullConsumer(name))
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(name) + ".>"}},
	}
}

// connPrefix starts every connection string; the version is in it so a
// string of a later form is refused with a clear message.
const connPrefix = "hookscope-relay-1:"

// ConnString is what a laptop needs to reach a relay: its address and a
// credential. Its String form is the one line `relay invite` prints; it
// holds a secret, so it never goes to logs, errors or command lines
// (Redacted is the form to show).
type ConnString struct {
	// URL is the relay's NATS address for laptops: wss://host/nats through
	// a tunnel, ws://host:port/nats on a LAN, nats://host:port for a NATS
	// deployment; several are separated by commas (a cluster).
	URL string `json:"url"`
	// Name is the credential's name; the laptop's durable consumer has it.
	Name string `json:"name"`
	// Seed is the NKey seed of the credential (embedded relays).
	Seed string `json:"seed,omitempty"`
	// JWT is a user JWT signed by the deployment's account, used with Seed
	// for an existing NATS deployment in operator mode.
	JWT string `json:"jwt,omitempty"`
	// Stream is the relay's stream name.
	Stream string `json:"stream"`
	// Since is when the credential was issued: a laptop's first connection
	// starts its consumer there, not at the start of the retention.
	Since time.Time `json:"since"`
}

// String is the one-line connection string (it holds the secret).
func (c ConnString) String() string {
	b, _ := json.Marshal(c)
	return connPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Redacted describes c without its secret.
func (c ConnString) Redacted() string {
	return fmt.Sprintf("%s at %s (stream %s)", c.Name, redactURL(c.URL), c.Stream)
}

// redactURL drops any user information from a URL list.
func redactURL(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// ParseConnString reads a connection string; its errors never quote it.
func ParseConnString(s string) (ConnString, error) {
	var c ConnString
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, connPrefix) {
		if strings.HasPrefix(s, "hookscope-relay-") {
			return c, errors.New("this relay connection string is of a later form than this Hookscope reads: update Hookscope")
		}
		return c, errors.New("not a relay connection string (it starts with " + connPrefix + "; `hookscope relay invite NAME` prints one)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(connPrefix):])
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	switch {
	case err != nil:
		return ConnString{}, errors.New("the relay connection string is damaged (cut short when copied?): ask for it again")
	case c.URL == "" || c.Stream == "" || c.Seed == "":
		return ConnString{}, errors.New("the relay connection string lacks its address, stream or credential: ask for it again")
	case CheckName(c.Name) != nil:
		return ConnString{}, fmt.Errorf("the relay connection string names no valid credential: %w", CheckName(c.Name))
	}
	if _, err := nkeys.FromSeed([]byte(c.Seed)); err != nil {
		return ConnString{}, errors.New("the relay connection string's credential is damaged: ask for it again")
	}
	return c, nil
}

// ReadConnString reads a connection string from the environment variable
// named envVar (through getenv) or from the file at path: exactly one of
// them is given. It is never taken from a command line, where every user
// of the machine could read it. Its errors say where from and what is
// wrong, never the string.
func ReadConnString(getenv func(string) string, envVar, path string) (ConnString, error) {
	var raw, from string
	switch {
	case envVar != "" && path != "":
		return ConnString{}, errors.New("give --relay-env or --relay-file, not both")
	case envVar != "":
		raw, from = getenv(envVar), "--relay-env "+envVar
		if strings.TrimSpace(raw) == "" {
			return ConnString{}, fmt.Errorf("%s: the environment variable is unset or empty", from)
		}
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return ConnString{}, fmt.Errorf("--relay-file: %w", err)
		}
		raw, from = string(b), "--relay-file "+path
	default:
		return ConnString{}, errors.New("give --relay-env VAR or --relay-file FILE: where the relay connection string is (hookscope relay invite NAME prints one)")
	}
	c, err := ParseConnString(raw)
	if err != nil {
		return ConnString{}, fmt.Errorf("%s: %w", from, err)
	}
	return c, nil
}

// ExternalConnString wraps a credential that an existing NATS deployment
// issued (a .creds file's contents: user JWT and NKey seed, or a seed
// alone) with the deployment's URL, for a laptop. Its permissions are the
// deployment's to set (see Permissions).
func ExternalConnString(natsURL, name, stream string, creds []byte, now time.Time) (ConnString, error) {
	if err := CheckName(name); err != nil {
		return ConnString{}, err
	}
	c := ConnString{URL: natsURL, Name: name, Stream: cmp.Or(stream, DefaultStream), Since: now.UTC()}
	kp, err := nkeys.ParseDecoratedUserNKey(creds)
	if err != nil {
		return ConnString{}, errors.New("the credentials file holds no user NKey seed (a .creds file from nsc, or a seed file)")
	}
	seed, _ := kp.Seed()
	c.Seed = string(seed)
	if strings.Contains(string(creds), "BEGIN NATS USER JWT") {
		if c.JWT, err = nkeys.ParseDecoratedJWT(creds); err != nil {
			return ConnString{}, errors.New("the credentials file's user JWT is damaged")
		}
	}
	return c, nil
}

// WebSocketURL turns the relay's public URL (https://host or
// http://host:port, as the service is given) into the laptops' address
// under /nats on the same host and port.
func WebSocketURL(public string) (string, error) {
	u, err := url.Parse(public)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the relay's public URL %q is not an absolute URL (e.g. https://relay.example.com)", public)
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	default:
		return "", fmt.Errorf("the relay's public URL %q must be http:// or https://", public)
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	u.Path = NATSPath
	return u.String(), nil
}

// NATSPath is where the relay's HTTP server serves NATS over WebSocket,
// beside the webhook receiver.
const NATSPath = "/nats"
