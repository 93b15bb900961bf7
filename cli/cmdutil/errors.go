package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// UsageError is an error in how a command was called: an unknown flag, a
// wrong value, a missing or stray argument, a combination that makes no
// sense. The command line exits 2 and points at --help.
type UsageError struct{ msg string }

// Error is the one-line explanation.
func (e *UsageError) Error() string { return e.msg }

// UsageErrorf makes a UsageError.
func UsageErrorf(format string, a ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, a...)}
}

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// ExitCoder lets a command choose its exit code for a failure.
type ExitCoder interface{ ExitCode() int }

// FlagError is the commands' cobra FlagErrorFunc: it turns a flag parse
// error into a UsageError of one line, naming the nearest valid flag for
// an unknown one.
func FlagError(cmd *cobra.Command, err error) error {
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &notExist):
		typed := "--" + notExist.GetSpecifiedName()
		name := notExist.GetSpecifiedName()
		if s := notExist.GetSpecifiedShortnames(); s != "" {
			// "-adr": a long name typed with one dash.
			typed, name = "-"+s, s
		}
		msg := "unknown flag: " + typed
		if near := NearestFlag(cmd, name); near != "" {
			msg += " (did you mean --" + near + "?)"
		}
		return &UsageError{msg: msg}
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return UsageErrorf("--%s %q: want %s", f.Name, invalid.GetValue(), expectation(f))
	}
	return &UsageError{msg: err.Error()}
}

// expectation says in words what a flag's value must look like.
func expectation(f *pflag.Flag) string {
	switch t := f.Value.Type(); {
	case t == "duration":
		return "a duration such as 500ms, 30s or 2m"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	default:
		return "a " + t
	}
}
