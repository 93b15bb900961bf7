package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NearestFlag returns the name of cmd's visible flag closest to typed (no
// dashes): one that typed is a prefix of, or within two edits of it; ""
// when none is near enough. Cobra suggests mistyped commands but not
// flags, hence this small Levenshtein.
func NearestFlag(cmd *cobra.Command, typed string) string {
	typed = strings.ToLower(strings.TrimLeft(typed, "-"))
	if typed == "" {
		return ""
	}
	best, bestDist := "", 3
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := levenshtein(typed, f.Name)
		if strings.HasPrefix(f.Name, typed) && d > 1 {
			d = 1 // a unique-looking prefix is as good as one typo
		}
		if d < bestDist || (d == bestDist && best != "" && f.Name < best) {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// levenshtein is the edit distance between a and b (insertions, deletions
// and substitutions of bytes; flag names are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
