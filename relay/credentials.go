package relay

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// The relay's data folder holds the JetStream store (jetstream/), the
// access list (credentials.json) and, while a relay runs, where it can be
// reached (relay.json). The two files are the owner's only (0600): the
// access list holds the relay's own key, and a laptop's key is never kept
// (its seed is printed once by Invite; only the public key is stored).
const (
	credentialsFile = "credentials.json"
	stateFile       = "relay.json"
	storeDir        = "jetstream"
	fileMode        = 0o600
	dirMode         = 0o700
)

// User is one invited credential.
type User struct {
	// Name names the credential and its durable consumer.
	Name string `json:"name"`
	// PublicKey is the NKey public key (the seed went to the user).
	PublicKey string `json:"public_key"`
	// InvitedAt is when the credential was issued.
	InvitedAt time.Time `json:"invited_at"`
	// RevokedAt is when it was revoked; zero while it is valid.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Active reports whether u may connect.
func (u User) Active() bool { return u.RevokedAt.IsZero() }

// Credentials is the relay's access list as kept in credentials.json.
type Credentials struct {
	// RelaySeed is the relay's own NKey seed: its publisher, and the
	// invite, revoke and status commands on the same machine, use it.
	RelaySeed string `json:"relay_seed"`
	// Users are the invited credentials, revoked ones included.
	Users []User `json:"users"`
}

// LoadCredentials reads dir's access list; a missing file is an empty
// list (nothing is created: see UpdateCredentials).
func LoadCredentials(dir string) (*Credentials, error) {
	b, err := os.ReadFile(filepath.Join(dir, credentialsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &Credentials{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the relay's credentials: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("read the relay's credentials %s: %w", filepath.Join(dir, credentialsFile), err)
	}
	return &c, nil
}

// UpdateCredentials changes dir's access list under a lock (one invite or
// revoke at a time across processes), creating the folder, the file and
// the relay's own key when missing, and writes it back whole.
func UpdateCredentials(dir string, fn func(*Credentials) error) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create the relay's data folder: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, credentialsFile+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	c, err := LoadCredentials(dir)
	if err != nil {
		return err
	}
	if c.RelaySeed == "" {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("create the relay's key: %w", err)
		}
		seed, _ := kp.Seed()
		c.RelaySeed = string(seed)
	}
	if err := fn(c); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the relay's credentials: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, credentialsFile), append(b, '\n'))
}

// Invite issues a credential called name and returns its seed. An active
// credential of that name is replaced only when replace is set (its old
// key stops working); a revoked name may be invited again.
func (c *Credentials) Invite(name string, replace bool, now time.Time) (seed string, err error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	i := slices.IndexFunc(c.Users, func(u User) bool { return u.Name == name })
	if i >= 0 && c.Users[i].Active() && !replace {
		return "", fmt.Errorf("%s already has a credential (invited %s); give --replace to issue a new one (the old one stops working), or choose another name", name, c.Users[i].InvitedAt.Local().Format(time.DateTime))
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("create a key for %s: %w", name, err)
	}
	pub, _ := kp.PublicKey()
	s, _ := kp.Seed()
	u := User{Name: name, PublicKey: pub, InvitedAt: now.UTC()}
	if i >= 0 {
		c.Users[i] = u
	} else {
		c.Users = append(c.Users, u)
	}
	return string(s), nil
}

// Revoke ends name's credential.
func (c *Credentials) Revoke(name string, now time.Time) error {
	i := slices.IndexFunc(c.Users, func(u User) bool { return u.Name == name })
	switch {
	case i < 0:
		return fmt.Errorf("no credential called %s (`hookscope relay status` lists them)", name)
	case !c.Users[i].Active():
		return fmt.Errorf("%s's credential was already revoked on %s", name, c.Users[i].RevokedAt.Local().Format(time.DateTime))
	}
	c.Users[i].RevokedAt = now.UTC()
	return nil
}

// nkeyUsers are the server's users for c: the relay's own (every
// permission) and each active credential with its scoped permissions.
func (c *Credentials) nkeyUsers(stream string) ([]*server.NkeyUser, error) {
	kp, err := nkeys.FromSeed([]byte(c.RelaySeed))
	if err != nil {
		return nil, fmt.Errorf("the relay's own key in %s is damaged: %w", credentialsFile, err)
	}
	pub, _ := kp.PublicKey()
	users := []*server.NkeyUser{{Nkey: pub}}
	for _, u := range c.Users {
		if u.Active() {
			users = append(users, &server.NkeyUser{Nkey: u.PublicKey, Permissions: Permissions(stream, u.Name)})
		}
	}
	return users, nil
}

// lockFile takes an exclusive lock file, waiting a few seconds for
// another holder; a lock older than a minute was left by a process that
// died holding it and is taken over.
func lockFile(path string) (unlock func(), err error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileMode)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock the relay's credentials: %w", err)
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another invite or revoke holds %s; try again (remove the file if no hookscope relay command is running)", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeFileAtomic replaces path with b (0600) through a temporary file,
// so a reader sees the old file or the new one, never half of one.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(fileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Invite issues name's credential in dir's access list and returns the
// connection string for laptops reaching the relay at laptopURL. A
// running relay learns of it from Admin.Reload.
func Invite(dir, name, laptopURL, stream string, replace bool, now time.Time) (ConnString, error) {
	c := ConnString{URL: laptopURL, Name: name, Stream: cmp.Or(stream, DefaultStream), Since: now.UTC()}
	err := UpdateCredentials(dir, func(cr *Credentials) (err error) {
		c.Seed, err = cr.Invite(name, replace, now)
		return err
	})
	if err != nil {
		return ConnString{}, err
	}
	return c, nil
}

// Revoke ends name's credential in dir's access list; a running relay
// applies it on Admin.Reload.
func Revoke(dir, name string, now time.Time) error {
	return UpdateCredentials(dir, func(cr *Credentials) error { return cr.Revoke(name, now) })
}
