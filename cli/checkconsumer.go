package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/hookscope/hookscope/inspector/replay"
)

const checkConsumerExamples = `  # run the standard check against your local consumer
  WEBHOOK_SECRET=... hookscope check-consumer --to http://127.0.0.1:3000/webhooks --secret-env WEBHOOK_SECRET

  # machine-readable report for CI (exit code 1 when a case fails)
  hookscope check-consumer --to http://127.0.0.1:3000/webhooks --secret-env WEBHOOK_SECRET --json`

// checkFailed makes check-consumer exit 1 with its own message.
type checkFailed struct{ failed, total int }

// Error is the one-line summary printed after the report.
func (e checkFailed) Error() string {
	return fmt.Sprintf("%d of %d cases failed", e.failed, e.total)
}

// ExitCode is 1: the consumer, not the command line, is at fault.
func (e checkFailed) ExitCode() int { return 1 }

func runCheckConsumer(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "check-consumer", "--to URL (--secret S | --secret-env VAR) [flags]", checkConsumerExamples+`

Cases: one message per event type (17), a duplicate event in a new message,
a message re-sent byte for byte, an out-of-order pair (media.ready, then the
earlier media.processing), a wrong signature and a missing signature. Each
must be answered 2xx within the time-out, except the last two, which must be
refused (401 or 403).`)
	to := fs.String("to", "", "your consumer's URL (http or https)")
	secrets := addSecretFlags(fs)
	limit := fs.Duration("timeout", replay.ServiceTimeout, "how fast a 2xx must arrive (the service waits 10 s)")
	seed := fs.Int64("seed", 0, "seed for the generated messages (0: random)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return usageError("--to is required: your consumer's URL")
	}
	if _, err := replay.ParseTarget(*to); err != nil {
		return usageError("--to: %v", err)
	}
	if *limit <= 0 {
		return usageError("--timeout must be positive")
	}
	secret, err := singleSecret(env, secrets, "check with")
	if err != nil {
		return err
	}
	if secret == nil {
		return usageError("--secret or --secret-env is required: the webhook secret your consumer verifies with")
	}
	r := replay.New(nil)
	opts := replay.CheckOptions{Target: *to, Secret: secret, Limit: *limit, Seed: *seed}
	if !*jsonOut && env.IsTerminal {
		// A progress line: the whole run takes up to 22 answers.
		n := len(replay.CheckCases())
		i := 0
		opts.OnCase = func(c replay.CaseResult) {
			i++
			fmt.Fprintf(env.Stderr, "\r%d/%d %s", i, n, c.Name)
			if i == n {
				fmt.Fprint(env.Stderr, "\r\033[K")
			}
		}
	}
	started := time.Now()
	rep, err := r.CheckConsumer(ctx, opts)
	if err != nil {
		return err
	}
	if *jsonOut {
		if err := printJSON(env, rep); err != nil {
			return fmt.Errorf("print report: %w", err)
		}
	} else {
		if err := rep.WriteText(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "(took %s)\n", time.Since(started).Round(time.Millisecond))
	}
	if !rep.OK() {
		return checkFailed{rep.Failed, len(rep.Cases)}
	}
	return nil
}
