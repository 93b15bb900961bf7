package cmdutil

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

// DBFlagUsage is the help text of every command's --db flag.
const DBFlagUsage = "store file (default: the app's store in the user config directory)"

// AddDBFlag registers --db on fs.
func AddDBFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "db", "", DBFlagUsage)
}

// SecretFlags are the repeatable --secret and --secret-env flags shared by
// every command that signs or verifies.
type SecretFlags struct {
	Values []string
	Envs   []string
}

// AddSecretFlags registers --secret and --secret-env on fs. Each is
// repeatable; a value is never split at commas (a secret may hold one).
func AddSecretFlags(fs *pflag.FlagSet) *SecretFlags {
	s := &SecretFlags{}
	fs.StringArrayVar(&s.Values, "secret", nil, "webhook secret `key` (repeatable, for rotation); prefer --secret-env so it stays out of shell history")
	fs.StringArrayVar(&s.Envs, "secret-env", nil, "name of the environment `variable` holding a webhook secret key (repeatable)")
	return s
}

// Resolve returns the secrets in flag order: --secret values first, then
// --secret-env values. An empty value is a usage error.
func (s *SecretFlags) Resolve(env *Env) ([][]byte, error) {
	var out [][]byte
	for _, v := range s.Values {
		if v == "" {
			return nil, UsageErrorf("--secret is empty; give the webhook's secret key")
		}
		out = append(out, []byte(v))
	}
	for _, name := range s.Envs {
		v := env.Getenv(name)
		if v == "" {
			return nil, UsageErrorf("--secret-env %s: the environment variable is unset or empty", name)
		}
		out = append(out, []byte(v))
	}
	return out, nil
}

// Single resolves the flags to exactly one secret (nil when none was
// given); what says what the secret is for ("sign fixtures").
func (s *SecretFlags) Single(env *Env, what string) ([]byte, error) {
	sec, err := s.Resolve(env)
	if err != nil {
		return nil, err
	}
	if len(sec) > 1 {
		return nil, UsageErrorf("give one secret to %s, not %d", what, len(sec))
	}
	if len(sec) == 0 {
		return nil, nil
	}
	return sec[0], nil
}

// SelectionFlags choose stored deliveries for replay and export.
type SelectionFlags struct {
	IDs        []string
	Types      []string
	Since      string
	Signatures []string
	Duplicates bool
}

// AddSelectionFlags registers --id, --type, --since, --signature and
// --duplicates on fs.
func AddSelectionFlags(fs *pflag.FlagSet) *SelectionFlags {
	s := &SelectionFlags{}
	fs.StringArrayVar(&s.IDs, "id", nil, "delivery `id` (repeatable, or comma-separated)")
	fs.StringArrayVar(&s.Types, "type", nil, "deliveries with an event of this `type` (repeatable), e.g. media.ready")
	fs.StringVar(&s.Since, "since", "", "deliveries received within this long (e.g. 30m, 2h) or since an RFC 3339 time")
	fs.StringArrayVar(&s.Signatures, "signature", nil, "deliveries with this signature `verdict`: valid, invalid, missing or unverified (repeatable)")
	fs.BoolVar(&s.Duplicates, "duplicates", false, "only deliveries carrying a duplicate event")
	return s
}

// Set reports whether any selection was given.
func (s *SelectionFlags) Set() bool {
	return len(s.IDs) > 0 || len(s.Types) > 0 || s.Since != "" || len(s.Signatures) > 0 || s.Duplicates
}

// Filter turns the selection into a store filter; a malformed value is a
// usage error.
func (s *SelectionFlags) Filter(now time.Time) (storage.Filter, error) {
	var f storage.Filter
	for _, v := range s.IDs {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			id, err := strconv.ParseInt(p, 10, 64)
			if err != nil || id <= 0 {
				return f, UsageErrorf("--id %q is not a delivery id (a positive number)", p)
			}
			f.IDs = append(f.IDs, id)
		}
	}
	for _, t := range s.Types {
		for _, p := range strings.Split(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				f.Types = append(f.Types, p)
			}
		}
	}
	if s.Since != "" {
		if d, err := time.ParseDuration(s.Since); err == nil {
			if d <= 0 {
				return f, UsageErrorf("--since must be a positive duration, got %s", s.Since)
			}
			f.Since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s.Since); err == nil {
			f.Since = t
		} else {
			return f, UsageErrorf("--since %q is neither a duration (30m, 2h) nor an RFC 3339 time", s.Since)
		}
	}
	for _, v := range s.Signatures {
		switch st := inspector.SignatureStatus(strings.ToLower(v)); st {
		case inspector.SignatureValid, inspector.SignatureInvalid, inspector.SignatureMissing, inspector.SignatureUnverified:
			f.Signatures = append(f.Signatures, st)
		default:
			return f, UsageErrorf("--signature %q: expected valid, invalid, missing or unverified", v)
		}
	}
	f.DuplicatesOnly = s.Duplicates
	return f, nil
}

// CheckHostPort checks that addr, the value of flag, is host:port with a
// port number (0 picks a free one), so a wrong address is a usage error
// before anything is opened or bound.
func CheckHostPort(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return UsageErrorf("%s %q: want host:port, for example 127.0.0.1:8787", flag, addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return UsageErrorf("%s %q: the port must be a number from 0 to 65535 (0 picks a free one), got %q", flag, addr, port)
	}
	return nil
}
