// Package cli holds Hookscope's headless commands. Every job the window can
// do has a command here, driving the same engines and the same store file.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Version is the Hookscope version; release builds override it with
// -ldflags "-X github.com/hookscope/hookscope/cli.Version=…".
var Version = "0.1.0-dev"

// Env is what a command gets from the process: its streams and environment
// lookups, injectable so tests run commands in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable (os.Getenv in production).
	Getenv func(string) string
	// IsTerminal reports whether Stdout is a terminal (colour output).
	IsTerminal bool
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands lists the subcommands. Each lives in a file of its own.
func commands() []command {
	return []command{
		{"listen", "receive webhook deliveries, verify, decode and store them", runListen},
		{"reverify", "judge stored deliveries' signatures again with new secrets", runReverify},
		{"version", "print the Hookscope version", runVersion},
		{"oauth", "walk the OAuth flow step by step: login, authorize, exchange, refresh, call, profiles, history", runOAuth},
		{"send", "POST realistic simulated deliveries (all 17 types, scenarios) to a URL", runSend},
		{"samples", "write one signed example delivery per event type for test suites", runSamples},
		{"sandbox", "run a local emulation of the service: OAuth pages, token endpoint, Data/Upload API, webhooks", runSandbox},
		{"replay", "send stored deliveries again: byte-exact, re-signed, edited, or as a chaos run", runReplay},
		{"check-consumer", "run the standard check of your webhook endpoint: 17 types, duplicates, order, signatures", runCheckConsumer},
		{"export", "write deliveries as pretty JSON, test fixtures, curl script, HAR 1.2 or NDJSON", runExport},
		{"import", "load a HAR, NDJSON or fixtures folder as deliveries, analyzed like received ones", runImport},
	}
}

// errUsage marks an error caused by how the command was called; it exits 2.
var errUsage = errors.New("usage error")

// usageError wraps a message so Run exits with code 2.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// Main runs the command line from the real process and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, _ := os.Stdout.Stat()
	env := &Env{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
	}
	return Run(ctx, env, args)
}

// Run executes args (without the program name) and returns the exit code:
// 0 success, 1 failure, 2 wrong usage.
func Run(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 && args[0] == "help" {
			return Run(ctx, env, []string{args[1], "--help"})
		}
		printUsage(env.Stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(env.Stderr, "hookscope %s: %s\n", c.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
			fmt.Fprintf(env.Stderr, "Run 'hookscope %s --help' for usage.\n", c.name)
			return 2
		default:
			fmt.Fprintf(env.Stderr, "hookscope %s: %v\n", c.name, err)
			var ec exitCoder
			if errors.As(err, &ec) {
				return ec.ExitCode()
			}
			return 1
		}
	}
	fmt.Fprintf(env.Stderr, "hookscope: unknown command %q\n\n", args[0])
	printUsage(env.Stderr)
	return 2
}

// exitCoder lets a command choose its exit code for a failure.
type exitCoder interface{ ExitCode() int }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Hookscope: inspect the video service's webhooks and walk its OAuth flow.")
	fmt.Fprintln(w, "\nUsage:\n  hookscope                 open the desktop app\n  hookscope <command> [flags]\n\nCommands:")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'hookscope <command> --help' for a command's flags and examples.")
}

// newFlagSet makes a flag set whose errors and help go to env.Stderr with
// the command's usage line and examples, and which never exits the process.
func newFlagSet(env *Env, name, usage, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet("hookscope "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: hookscope %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(out, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors (exit 2)
// and refusing stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// The flag package already printed the problem and the usage.
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q (this command takes only flags)", fs.Arg(0))
	}
	return nil
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

// Set appends one occurrence.
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// secretFlags are the repeatable --secret and --secret-env flags shared by
// every command that signs or verifies.
type secretFlags struct {
	values multiFlag
	envs   multiFlag
}

func addSecretFlags(fs *flag.FlagSet) *secretFlags {
	s := &secretFlags{}
	fs.Var(&s.values, "secret", "webhook secret key (repeatable, for rotation); prefer --secret-env so it stays out of shell history")
	fs.Var(&s.envs, "secret-env", "name of an environment variable holding a webhook secret key (repeatable)")
	return s
}

// resolve returns the secrets in flag order: --secret values first, then
// --secret-env values.
func (s *secretFlags) resolve(env *Env) ([][]byte, error) {
	var out [][]byte
	for _, v := range s.values {
		if v == "" {
			return nil, usageError("--secret is empty; give the webhook's secret key")
		}
		out = append(out, []byte(v))
	}
	for _, name := range s.envs {
		v := env.Getenv(name)
		if v == "" {
			return nil, usageError("--secret-env %s: the environment variable is unset or empty", name)
		}
		out = append(out, []byte(v))
	}
	return out, nil
}

func runVersion(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "version", "", "  hookscope version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "hookscope %s\n", Version)
	return nil
}
