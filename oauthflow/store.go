package oauthflow

import (
	"context"
	"errors"
)

// ErrNotFound is returned (wrapped) by a Store for a missing profile,
// token or flow.
var ErrNotFound = errors.New("not found")

// Store is everything the OAuth tab and the oauth commands keep between
// runs: profiles, the current token per profile, flow state and the
// transcript history. storage.DB implements it; the file it lives in is
// 0600 because it holds client secrets and tokens.
type Store interface {
	Recorder
	// SaveProfile creates or replaces a profile by name.
	SaveProfile(ctx context.Context, p Profile) error
	// LoadProfile returns a profile; ErrNotFound when there is none.
	LoadProfile(ctx context.Context, name string) (Profile, error)
	// ListProfiles returns all profiles sorted by name.
	ListProfiles(ctx context.Context) ([]Profile, error)
	// DeleteProfile removes a profile with its token (history stays).
	DeleteProfile(ctx context.Context, name string) error
	// LoadToken returns a profile's current token; ErrNotFound when none.
	LoadToken(ctx context.Context, profile string) (Token, error)
	// LatestFlowState returns the most recently saved flow state of a
	// profile; ErrNotFound when none.
	LatestFlowState(ctx context.Context, profile string) (State, error)
	// ListTranscripts returns up to limit transcripts, oldest first, of a
	// profile ("" for all) and flow ("" for all flows): the latest ones
	// when there are more.
	ListTranscripts(ctx context.Context, profile, flowID string, limit int) ([]Transcript, error)
}
