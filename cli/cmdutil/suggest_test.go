package cmdutil

import (
	"testing"

	"github.com/spf13/cobra"
)

func TestNearestFlag(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().String("addr", "", "")
	cmd.Flags().Bool("all-types", false, "")
	cmd.Flags().String("secret-env", "", "")
	cmd.Flags().String("max-body", "", "")
	cmd.Flags().Bool("hidden-one", false, "")
	_ = cmd.Flags().MarkHidden("hidden-one")
	for _, tc := range []struct{ typed, want string }{
		{"adr", "addr"},
		{"--addrr", "addr"},
		{"all-type", "all-types"},
		{"secretenv", "secret-env"},
		{"secert-env", "secret-env"},
		{"max", "max-body"}, // a prefix
		{"hidden-on", ""},   // hidden flags are not suggested
		{"zzzzzz", ""},
		{"", ""},
	} {
		if got := NearestFlag(cmd, tc.typed); got != tc.want {
			t.Errorf("NearestFlag(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"addr", "adr", 1}, {"kitten", "sitting", 3}, {"secret", "secert", 2},
	} {
		if d := levenshtein(tc.a, tc.b); d != tc.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
