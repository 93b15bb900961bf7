package station

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

// memKV is a KV in memory.
type memKV map[string][]byte

func (m memKV) Value(_ context.Context, key string) ([]byte, bool, error) {
	v, ok := m[key]
	return v, ok, nil
}

func (m memKV) SetValue(_ context.Context, key string, v []byte) error {
	m[key] = v
	return nil
}

// noDeleteStore is a store whose secrets cannot be removed.
type noDeleteStore struct{ memKV }

func (s noDeleteStore) SetValue(ctx context.Context, key string, v []byte) error {
	if key == storeSecretsKey {
		return errors.New("attempt to write a readonly database")
	}
	return s.memKV.SetValue(ctx, key, v)
}

// TestSecretsMovedToTheKeyringLeaveNoCopySilently: secrets an earlier run
// kept in the store move to the keyring, merged with its own, and are
// removed from the store file; a copy that cannot be removed is said.
func TestSecretsMovedToTheKeyringLeaveNoCopySilently(t *testing.T) {
	keyring.MockInit()
	fs := memKV{}
	sv := storeVault{store: fs}
	if err := sv.Save([][]byte{[]byte("old-secret")}); err != nil {
		t.Fatal(err)
	}
	if err := (keyringVault{}).Save([][]byte{[]byte("kept-secret")}); err != nil {
		t.Fatal(err)
	}
	v, err := ChooseVault(fs, "/tmp/hooks.db")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := v.Load()
	if len(got) != 2 || string(got[0]) != "kept-secret" || string(got[1]) != "old-secret" {
		t.Fatalf("the keyring holds %q, want both secrets", got)
	}
	if left, _ := sv.Load(); len(left) != 0 {
		t.Fatalf("the store file still holds %q", left)
	}

	_ = sv.Save([][]byte{[]byte("another")})
	_, err = ChooseVault(noDeleteStore{fs}, "/tmp/hooks.db")
	if err == nil || !strings.Contains(err.Error(), "a copy is still in the store file /tmp/hooks.db") {
		t.Fatalf("a copy left in the store was not said: %v", err)
	}
}

// TestRelayConnectionKeptWithTheSecrets: the relay connection string
// round-trips in either vault, apart from the webhook secrets, and ""
// forgets it.
func TestRelayConnectionKeptWithTheSecrets(t *testing.T) {
	keyring.MockInit()
	for _, v := range []Vault{storeVault{store: memKV{}, path: "x.db"}, keyringVault{}} {
		if got, err := v.LoadRelay(); err != nil || got != "" {
			t.Fatalf("%s: none saved: %q, %v", v.Name(), got, err)
		}
		if err := v.Save([][]byte{[]byte("s1")}); err != nil {
			t.Fatal(err)
		}
		if err := v.SaveRelay("hookscope-relay-1.abc"); err != nil {
			t.Fatal(err)
		}
		if got, err := v.LoadRelay(); err != nil || got != "hookscope-relay-1.abc" {
			t.Fatalf("%s: saved: %q, %v", v.Name(), got, err)
		}
		if s, err := v.Load(); err != nil || len(s) != 1 || string(s[0]) != "s1" {
			t.Fatalf("%s: secrets beside it: %q, %v", v.Name(), s, err)
		}
		if err := v.SaveRelay(""); err != nil {
			t.Fatal(err)
		}
		if got, _ := v.LoadRelay(); got != "" {
			t.Fatalf("%s: forgotten: %q", v.Name(), got)
		}
	}
}

// TestRelayConnectionMovedToTheKeyring: a connection string an earlier
// run kept in the store file moves to the keyring when it works, and is
// gone from the store file.
func TestRelayConnectionMovedToTheKeyring(t *testing.T) {
	keyring.MockInit()
	fs := memKV{}
	sv := storeVault{store: fs}
	if err := sv.SaveRelay("hookscope-relay-1:old"); err != nil {
		t.Fatal(err)
	}
	v, err := ChooseVault(fs, "/tmp/hooks.db")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.LoadRelay(); got != "hookscope-relay-1:old" || v.Name() != "the OS keyring" {
		t.Fatalf("%s holds %q", v.Name(), got)
	}
	if left, _ := sv.LoadRelay(); left != "" {
		t.Fatalf("the store file still holds %q", left)
	}
}
