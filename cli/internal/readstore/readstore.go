// Package readstore opens the store for the read-only commands (list,
// show, tail, resends, mcp): one that does not exist is an error, never
// created. (The shared cmdutil helper for this is on its way; until it
// lands this is the one place that checks.)
package readstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// Open opens the store at path (the default store when empty) when the
// file exists.
func Open(path string) (*storage.DB, error) {
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = home + path[1:]
		}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no store at %s: nothing was received there yet (run hookscope listen, or give --db)", path)
	}
	return storage.Open(path)
}

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
