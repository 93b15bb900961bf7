// Package checkconsumer is `hookscope check-consumer`: the standard check
// of a webhook endpoint (17 types, duplicates, order, signatures).
package checkconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

const examples = `  # run the standard check against your local consumer
  WEBHOOK_SECRET=... hookscope check-consumer http://127.0.0.1:3000/webhooks --secret-env WEBHOOK_SECRET

  # machine-readable report for CI (exit code 1 when a case fails)
  hookscope check-consumer http://127.0.0.1:3000/webhooks --secret-env WEBHOOK_SECRET --json

  # stop at the first failed case
  hookscope check-consumer http://127.0.0.1:3000/webhooks --secret-env WEBHOOK_SECRET --fail-fast`

// checkFailed makes check-consumer exit 1 with its own message.
type checkFailed struct{ failed, run, skipped int }

// Error is the one-line summary printed after the report.
func (e checkFailed) Error() string {
	if e.skipped > 0 {
		return fmt.Sprintf("%d of %d cases failed (stopped at the first failure; %s not run)", e.failed, e.run, plural.S(e.skipped, "case"))
	}
	return fmt.Sprintf("%d of %d cases failed", e.failed, e.run)
}

// ExitCode is 1: the consumer, not the command line, is at fault.
func (e checkFailed) ExitCode() int { return 1 }

// Options are check-consumer's arguments and flags.
type Options struct {
	Env      *cmdutil.Env
	To       string
	Secrets  *cmdutil.SecretFlags
	Timeout  time.Duration
	Seed     int64
	FailFast bool
	JSON     bool

	secret []byte
}

// NewCmd builds `hookscope check-consumer`; runF replaces the check in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "check-consumer URL (--secret S | --secret-env VAR) [flags]",
		Short: "Run the standard check of your webhook endpoint: 17 types, duplicates, order, signatures",
		Long: `Run the standard check of your consumer (the URL argument or --to).

Cases: one message per event type (17), a duplicate event in a new message,
a message re-sent byte for byte, an out-of-order pair (media.ready, then the
earlier media.processing), a wrong signature and a missing signature. Each
must be answered 2xx within the time-out, except the last two, which must be
refused (401 or 403). The command exits 1 when a case fails; --fail-fast
stops at the first one.

Each case is reported as it finishes, on standard error: a progress line on
a terminal, one line per case otherwise (CI logs); the report follows on
standard output.`,
		Example: examples,
		Args:    cmdutil.MaxArgs(1, "one consumer URL"),
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.To, "to", "", "your consumer's URL, http or https (or give it as the argument)")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.DurationVar(&o.Timeout, "timeout", replay.ServiceTimeout, "how fast a 2xx must arrive (the service waits 10 s)")
	fs.Int64Var(&o.Seed, "seed", 0, "seed for the generated messages (0: random)")
	fs.BoolVar(&o.FailFast, "fail-fast", false, "stop at the first failed case (exit 1)")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	return cmd
}

func (o *Options) validate(args []string) error {
	var err error
	if o.To, err = cmdutil.ArgOrFlag(args, "--to", o.To); err != nil {
		return err
	}
	if o.To == "" {
		return cmdutil.UsageErrorf("your consumer's URL is required (the argument or --to)")
	}
	if _, err := replay.ParseTarget(o.To); err != nil {
		return cmdutil.UsageErrorf("%s: %v", o.To, err)
	}
	if o.Timeout <= 0 {
		return cmdutil.UsageErrorf("--timeout must be positive")
	}
	if o.secret, err = o.Secrets.Single(o.Env, "check with"); err != nil {
		return err
	}
	if o.secret == nil {
		return cmdutil.UsageErrorf("--secret or --secret-env is required: the webhook secret your consumer verifies with")
	}
	return nil
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	r := replay.New(nil)
	opts := replay.CheckOptions{Target: o.To, Secret: o.secret, Limit: o.Timeout, Seed: o.Seed, FailFast: o.FailFast}
	progress(env, &opts)
	started := time.Now()
	rep, err := r.CheckConsumer(ctx, opts)
	if env.IsTerminal {
		fmt.Fprint(env.Stderr, "\r\033[K") // the progress line goes
	}
	if err != nil {
		return err
	}
	if o.JSON {
		if err := cmdutil.PrintJSON(env, rep); err != nil {
			return fmt.Errorf("print report: %w", err)
		}
	} else {
		if err := rep.WriteText(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "(took %s)\n", human.Duration(time.Since(started)))
	}
	if !rep.OK() {
		return checkFailed{rep.Failed, len(rep.Cases), rep.Skipped}
	}
	return nil
}

// progress reports each case on standard error as it finishes, so a run
// against a slow consumer (up to 23 answers of up to 15 s each) is never
// silent: on a terminal one line, rewritten, that names the case waiting
// for its answer; otherwise (piped, CI) a plain line per case.
func progress(env *cmdutil.Env, opts *replay.CheckOptions) {
	n := len(replay.CheckCases())
	done, passed, failed := 0, 0, 0
	if env.IsTerminal {
		opts.OnStart = func(name string) {
			fmt.Fprintf(env.Stderr, "\r\033[K%d/%d %s: waiting for the answer (%d passed, %d failed so far)", done+1, n, name, passed, failed)
		}
	}
	opts.OnCase = func(c replay.CaseResult) {
		done++
		switch c.Verdict {
		case replay.Pass:
			passed++
		case replay.Fail:
			failed++
		}
		if !env.IsTerminal {
			fmt.Fprintf(env.Stderr, "%d/%d %s %s: %s\n", done, n, c.Verdict.Mark(), c.Name, c.Answers(true))
		}
	}
}
