// Package readstore holds what the commands that read the store with an
// expression share: the --where flag's compile and help, and the line
// about deliveries an expression could not check. (The store itself is
// opened by cmdutil.OpenExistingStore, which never creates one.)
package readstore

import (
	"fmt"
	"io"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/rules"
)

// Where compiles a --where expression for stored deliveries; "" is no
// expression (nil). A compile error is rendered as a compiler would, with
// a caret under the column.
func Where(src string) (*rules.Expr, error) {
	if src == "" {
		return nil, nil
	}
	e, err := rules.Compile(src, rules.Stored)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--where is not a valid expression (docs/rules.md lists the variables):\n%s", rules.Render(err))
	}
	return e, nil
}

// WhereUsage is the help text of every command's --where flag.
const WhereUsage = "only deliveries this `expression` is true of, e.g. 'events.exists(e, e.type == \"media.ready\")' (docs/rules.md)"

// Failed tells, on w, how many deliveries an expression could not check
// (they were left out), when any.
func Failed(w io.Writer, st rules.FindStats) {
	if st.Failed > 0 {
		fmt.Fprintf(w, "--where: %d deliveries could not be checked and were left out (first: %v)\n", st.Failed, st.FirstFailure)
	}
}
