package replay

import (
	"context"
	"fmt"
)

// KV is the store's small settings table; storage.DB implements it. The
// desktop view and the CLI remember the last replay target in it, so both
// faces offer the same URL.
type KV interface {
	Value(ctx context.Context, key string) ([]byte, bool, error)
	SetValue(ctx context.Context, key string, value []byte) error
}

// lastTargetKey is where the last replay target is kept.
const lastTargetKey = "replay.last_target"

// LastTarget returns the remembered replay target, or "" when none is.
func LastTarget(ctx context.Context, kv KV) (string, error) {
	v, ok, err := kv.Value(ctx, lastTargetKey)
	if err != nil {
		return "", fmt.Errorf("read the last replay target: %w", err)
	}
	if !ok {
		return "", nil
	}
	return string(v), nil
}

// RememberTarget keeps target for next time. A URL carrying credentials
// (user info, token parameters) is not kept: the store would then hold a
// secret the user never asked to save. It reports whether it was kept.
func RememberTarget(ctx context.Context, kv KV, target string) (bool, error) {
	if _, err := ParseTarget(target); err != nil {
		return false, err
	}
	if RedactURL(target) != target {
		return false, nil
	}
	if err := kv.SetValue(ctx, lastTargetKey, []byte(target)); err != nil {
		return false, fmt.Errorf("remember the replay target: %w", err)
	}
	return true, nil
}
