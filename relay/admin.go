package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// ErrNotRunning says no relay is running on the data folder.
var ErrNotRunning = errors.New("no relay is running with this data folder")

// Admin is a connection to a relay running on this machine, made with
// the relay's own key from its data folder (invite, revoke and status use
// it).
type Admin struct {
	dir   string
	state state
	nc    *nats.Conn
	js    jetstream.JetStream
}

// DialAdmin connects to the relay running on dir; ErrNotRunning when none
// is.
func DialAdmin(ctx context.Context, dir string) (*Admin, error) {
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, err
	}
	creds, err := LoadCredentials(dir)
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed([]byte(creds.RelaySeed))
	if err != nil {
		return nil, fmt.Errorf("the relay's own key in %s is damaged: %w", credentialsFile, err)
	}
	nc, err := nats.Connect(st.ClientURL, nkeyOption(kp), nats.NoReconnect(), nats.Timeout(3*time.Second), nats.Name("hookscope relay admin"))
	if err != nil {
		// relay.json outlived a relay that was killed.
		return nil, fmt.Errorf("%w (its address file says %s, which does not answer: %v)", ErrNotRunning, st.ClientURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("the relay's JetStream: %w", err)
	}
	return &Admin{dir: dir, state: st, nc: nc, js: js}, nil
}

// Close ends the connection.
func (a *Admin) Close() { a.nc.Close() }

// Reload asks the relay to read its credentials again (after an invite
// or revoke): a revoked credential's connections are closed before it
// answers.
func (a *Admin) Reload(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := a.nc.RequestWithContext(ctx, adminSubject, nil)
	if err != nil {
		return fmt.Errorf("ask the relay to read its credentials again: %w", err)
	}
	if s := string(m.Data); s != "ok" {
		return fmt.Errorf("the relay could not apply its credentials: %s", s)
	}
	return nil
}

// PublicURL is the URL the running relay gives the service ("" until
// known), and LaptopURL the laptops' address derived from it.
func (a *Admin) PublicURL() string { return a.state.PublicURL }

// LaptopURL is the laptops' address ("" until the public URL is known).
func (a *Admin) LaptopURL() string { return a.state.LaptopURL }

// Status is what `relay status` shows.
type Status struct {
	PublicURL string `json:"public_url,omitempty"`
	LaptopURL string `json:"laptop_url,omitempty"`
	Stream    string `json:"stream"`
	// Deliveries and Bytes are what the stream holds now, First and Last
	// the receive times of its oldest and newest.
	Deliveries uint64    `json:"deliveries"`
	Bytes      uint64    `json:"bytes"`
	FirstSeq   uint64    `json:"first_seq"`
	LastSeq    uint64    `json:"last_seq"`
	First      time.Time `json:"first,omitzero"`
	Last       time.Time `json:"last,omitzero"`
	// MaxAge and MaxBytes are the stream's limits (MaxBytes -1: none).
	MaxAge   time.Duration  `json:"max_age"`
	MaxBytes int64          `json:"max_bytes"`
	Replicas int            `json:"replicas"`
	Laptops  []LaptopStatus `json:"laptops"`
}

// LaptopStatus is one credential's position.
type LaptopStatus struct {
	Name      string    `json:"name"`
	InvitedAt time.Time `json:"invited_at,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Connected is set while the laptop is reading (a pull is waiting).
	Connected bool `json:"connected"`
	// Started is false until the laptop first connected.
	Started bool `json:"started"`
	// Behind is how many deliveries the laptop has not acknowledged.
	Behind uint64 `json:"behind"`
	// LastSeen is the laptop's last delivery or acknowledgement.
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// Status reads the stream and each credential's consumer.
func (a *Admin) Status(ctx context.Context) (*Status, error) {
	creds, err := LoadCredentials(a.dir)
	if err != nil {
		return nil, err
	}
	st, err := ReadStatus(ctx, a.js, a.state.Stream, creds.Users)
	if err != nil {
		return nil, err
	}
	st.PublicURL, st.LaptopURL = a.state.PublicURL, a.state.LaptopURL
	return st, nil
}

// ReadStatus reads stream's state and the consumers of users (and of any
// other durable consumer on it) through js.
func ReadStatus(ctx context.Context, js jetstream.JetStream, stream string, users []User) (*Status, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read the relay's stream %s: %w", stream, err)
	}
	info := s.CachedInfo()
	st := &Status{
		Stream: stream, Deliveries: info.State.Msgs, Bytes: info.State.Bytes,
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq,
		First: info.State.FirstTime, Last: info.State.LastTime,
		MaxAge: info.Config.MaxAge, MaxBytes: info.Config.MaxBytes, Replicas: info.Config.Replicas,
	}
	if st.Deliveries == 0 {
		st.First, st.Last = time.Time{}, time.Time{}
	}
	byName := map[string]*jetstream.ConsumerInfo{}
	list := s.ListConsumers(ctx)
	for ci := range list.Info() {
		if ci.Config.Durable != "" {
			byName[ci.Name] = ci
		}
	}
	if err := list.Err(); err != nil {
		return nil, fmt.Errorf("list the relay's consumers: %w", err)
	}
	seen := map[string]bool{}
	for _, u := range users {
		seen[u.Name] = true
		ls := LaptopStatus{Name: u.Name, InvitedAt: u.InvitedAt, RevokedAt: u.RevokedAt}
		if ci := byName[u.Name]; ci != nil {
			fill(&ls, ci)
		}
		st.Laptops = append(st.Laptops, ls)
	}
	for name, ci := range byName {
		if !seen[name] {
			ls := LaptopStatus{Name: name}
			fill(&ls, ci)
			st.Laptops = append(st.Laptops, ls)
		}
	}
	slices.SortFunc(st.Laptops, func(a, b LaptopStatus) int { return cmp.Compare(a.Name, b.Name) })
	return st, nil
}

// fill sets a laptop's position from its consumer.
func fill(ls *LaptopStatus, ci *jetstream.ConsumerInfo) {
	ls.Started = ci.Delivered.Consumer > 0 || ci.AckFloor.Stream > 0 || ci.NumWaiting > 0
	ls.Connected = ci.NumWaiting > 0
	ls.Behind = ci.NumPending + uint64(ci.NumAckPending)
	for _, t := range []*time.Time{ci.Delivered.Last, ci.AckFloor.Last} {
		if t != nil && t.After(ls.LastSeen) {
			ls.LastSeen = *t
		}
	}
}
