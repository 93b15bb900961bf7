// Package cmdutil holds what Hookscope's commands share: the injected
// environment, usage errors, argument checks, the flags several commands
// take, the store, and shell completion of stored values. Each command
// lives in a package of its own under cli/ and builds its cobra command in
// a NewCmd constructor; nothing here is package-level state.
package cmdutil

import "io"

// Env is what a command gets from the process: its streams, environment
// lookups and the version it reports, injectable so tests run commands
// in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable (os.Getenv in production).
	Getenv func(string) string
	// IsTerminal reports whether Stdout is a terminal (colour output).
	IsTerminal bool
	// Version is the Hookscope version the commands print and send
	// (User-Agent, HAR creator).
	Version string
}
