package station

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/hookscope/hookscope/storage"
)

// Vault keeps the webhook secrets out of plain preference files: in the
// OS keyring when it works, else in the store file (created 0600).
// ChooseVault picks one; the window and listen read the same.
type Vault interface {
	// Load returns the secrets, in order (none: nil).
	Load() ([][]byte, error)
	// Save replaces them.
	Save(secrets [][]byte) error
	// Where says in plain words where they are kept.
	Where() string
	// Name is where they are kept in two or three words: "the OS
	// keyring", "the store file".
	Name() string
	// LoadRelay is the window's relay connection string (it holds a
	// credential, so it is kept with the secrets), "" when none is saved.
	LoadRelay() (string, error)
	// SaveRelay replaces it; "" forgets it.
	SaveRelay(conn string) error
}

// keyringService and keyringUser name the secrets' keyring entry.
const (
	keyringService = storage.AppID
	keyringUser    = "webhook-secrets"
	// storeSecretsKey is the kv key used when no keyring is available.
	storeSecretsKey = "secrets.webhook"
	// keyringRelayUser and storeRelayKey hold the relay connection string.
	keyringRelayUser = "relay-connection"
	storeRelayKey    = "secrets.relay"
)

// keyringVault keeps the secrets in the OS keyring (Secret Service on
// Linux, Keychain on macOS, Credential Manager on Windows).
type keyringVault struct{}

func (keyringVault) Load() ([][]byte, error) {
	s, err := keyring.Get(keyringService, keyringUser)
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets from the OS keyring: %w", err)
	}
	return decodeSecrets([]byte(s))
}

func (keyringVault) Save(secrets [][]byte) error {
	if len(secrets) == 0 {
		err := keyring.Delete(keyringService, keyringUser)
		if err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return fmt.Errorf("remove secrets from the OS keyring: %w", err)
		}
		return nil
	}
	if err := keyring.Set(keyringService, keyringUser, string(encodeSecrets(secrets))); err != nil {
		return fmt.Errorf("save secrets in the OS keyring: %w", err)
	}
	return nil
}

func (keyringVault) Where() string { return "the OS keyring" }

func (keyringVault) Name() string { return "the OS keyring" }

func (keyringVault) LoadRelay() (string, error) {
	s, err := keyring.Get(keyringService, keyringRelayUser)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the relay connection from the OS keyring: %w", err)
	}
	return s, nil
}

func (keyringVault) SaveRelay(conn string) error {
	if conn == "" {
		err := keyring.Delete(keyringService, keyringRelayUser)
		if err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return fmt.Errorf("remove the relay connection from the OS keyring: %w", err)
		}
		return nil
	}
	if err := keyring.Set(keyringService, keyringRelayUser, conn); err != nil {
		return fmt.Errorf("save the relay connection in the OS keyring: %w", err)
	}
	return nil
}

// storeVault keeps the secrets in the store's key-value table; the store
// file is created with 0600 permissions.
type storeVault struct {
	store KV
	path  string
}

func (v storeVault) Load() ([][]byte, error) {
	b, ok, err := v.store.Value(context.Background(), storeSecretsKey)
	if err != nil {
		return nil, fmt.Errorf("read secrets from the store: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return decodeSecrets(b)
}

func (v storeVault) Save(secrets [][]byte) error {
	if err := v.store.SetValue(context.Background(), storeSecretsKey, encodeSecrets(secrets)); err != nil {
		return fmt.Errorf("save secrets in the store: %w", err)
	}
	return nil
}

func (v storeVault) Where() string {
	return "the store file " + v.path + " (readable only by you: 0600) — no OS keyring was available"
}

func (storeVault) Name() string { return "the store file" }

func (v storeVault) LoadRelay() (string, error) {
	b, _, err := v.store.Value(context.Background(), storeRelayKey)
	if err != nil {
		return "", fmt.Errorf("read the relay connection from the store: %w", err)
	}
	return string(b), nil
}

func (v storeVault) SaveRelay(conn string) error {
	if err := v.store.SetValue(context.Background(), storeRelayKey, []byte(conn)); err != nil {
		return fmt.Errorf("save the relay connection in the store: %w", err)
	}
	return nil
}

func encodeSecrets(secrets [][]byte) []byte {
	ss := make([]string, len(secrets))
	for i, s := range secrets {
		ss[i] = string(s)
	}
	b, _ := json.Marshal(ss) // a []string always marshals
	return b
}

func decodeSecrets(b []byte) ([][]byte, error) {
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, errors.New("stored secrets are unreadable (not a JSON list); set them again")
	}
	out := make([][]byte, 0, len(ss))
	for _, s := range ss {
		if s != "" {
			out = append(out, []byte(s))
		}
	}
	return out, nil
}

// keyringWorks probes the OS keyring. Headless Linux often has no Secret
// Service (no D-Bus session), and a probe must not hang the window, so it
// gives up after a few seconds.
func keyringWorks() bool {
	res := make(chan bool, 1)
	go func() {
		_, err := keyring.Get(keyringService, keyringUser)
		res <- err == nil || errors.Is(err, keyring.ErrNotFound)
	}()
	select {
	case ok := <-res:
		return ok
	case <-time.After(3 * time.Second):
		return false
	}
}

// ChooseVault picks the keyring when it works, else the store (whose
// file is path). When the keyring is chosen, secrets an earlier run kept
// in the store move there: added to the keyring's, then removed from the
// store file. The error says what went wrong halfway (the secrets stayed
// in the store, or a copy is left there); the vault returned holds every
// secret either way.
func ChooseVault(store KV, path string) (Vault, error) {
	sv := storeVault{store: store, path: path}
	if !keyringWorks() {
		return sv, nil
	}
	kv := keyringVault{}
	if err := moveRelay(sv, kv); err != nil {
		return kv, fmt.Errorf("the relay connection in the store file %s: %w", path, err)
	}
	old, err := sv.Load()
	if err != nil {
		return kv, fmt.Errorf("secrets in the store file %s were not moved to the OS keyring: %w", path, err)
	}
	if len(old) == 0 {
		return kv, nil
	}
	cur, err := kv.Load()
	if err != nil {
		return sv, fmt.Errorf("secrets stay in the store file %s: %w", path, err)
	}
	merged := cur
	for _, s := range old {
		if !slices.ContainsFunc(merged, func(c []byte) bool { return bytes.Equal(c, s) }) {
			merged = append(merged, s)
		}
	}
	if len(merged) > len(cur) {
		if err := kv.Save(merged); err != nil {
			return sv, fmt.Errorf("secrets stay in the store file %s: %w", path, err)
		}
	}
	if err := sv.Save(nil); err != nil {
		return kv, fmt.Errorf("the secrets moved to the OS keyring, but a copy is still in the store file %s (remove the secrets in Settings and add them again): %w", path, err)
	}
	return kv, nil
}

// moveRelay moves a relay connection string an earlier run kept in the
// store file to the keyring (one the keyring holds already stays), and
// removes it from the store file.
func moveRelay(from storeVault, to keyringVault) error {
	conn, err := from.LoadRelay()
	if err != nil || conn == "" {
		return err
	}
	if cur, err := to.LoadRelay(); err != nil {
		return err
	} else if cur == "" {
		if err := to.SaveRelay(conn); err != nil {
			return err
		}
	}
	return from.SaveRelay("")
}
