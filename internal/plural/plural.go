// Package plural writes a count with its noun in the right number, so no
// message says "1 messages" or "2 problem(s)".
package plural

import (
	"strconv"

	"github.com/hookscope/hookscope/internal/human"
)

// Count says "1 message" or "3 messages" ("1,240 messages"): one is the singular noun, many
// the plural.
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return human.Count(n) + " " + many
}

// S is Count with the plural made by adding "s" to one.
func S(n int, one string) string { return Count(n, one, one+"s") }
