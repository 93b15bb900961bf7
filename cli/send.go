package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

const sendExamples = `  hookscope send --to http://127.0.0.1:8080/hooks --secret-env HOOK_SECRET --all-types
  hookscope send --to http://127.0.0.1:8080/hooks --type media.ready --type media.deleted --count 5
  hookscope send --to http://127.0.0.1:8080/hooks --scenario viewing-session --batch 3
  hookscope send --to https://my-app.example/webhooks --scenario at-least-once --duplicates 2 --json
  hookscope send --to http://127.0.0.1:3000/wh --all-types --seed 7 --ignore-status`

// sendLine is one POST in send's --json output.
type sendLine struct {
	N        int         `json:"n"`
	Of       int         `json:"of"`
	HookUUID string      `json:"hook_uuid"`
	Events   []sendEvent `json:"events"`
	Bytes    int         `json:"bytes"`
	Status   int         `json:"status"`
	// LatencyMS runs from sending the request to reading the answer's headers.
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

type sendEvent struct {
	UUID string `json:"uuid"`
	Type string `json:"type"`
}

func runSend(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "send", "--to URL [--secret S | --secret-env VAR] (--type T... | --all-types | --scenario NAME) [flags]", sendExamples)
	to := fs.String("to", "", "consumer URL to POST deliveries to (required)")
	secrets := addSecretFlags(fs)
	var types multiFlag
	fs.Var(&types, "type", "event type to send (repeatable): "+strings.Join(catalog.TypeNames(), ", "))
	allTypes := fs.Bool("all-types", false, "send one event of each of the 17 types")
	scenario := fs.String("scenario", "", "send a scenario instead of single events: "+strings.Join(simulate.Scenarios(), ", "))
	batch := fs.Int("batch", 1, "events per message (the service batches events that occur close together)")
	dups := fs.Int("duplicates", 0, "extra copies of every event, each in another message (at-least-once delivery)")
	shuffle := fs.Bool("shuffle", false, "mix the order of events before batching (the service does not guarantee order)")
	count := fs.Int("count", 1, "repeat: events per type, or runs of the scenario")
	ignore := fs.Bool("ignore-status", false, "exit 0 even when an answer is not 2xx")
	jsonOut := fs.Bool("json", false, "print one JSON object per POST instead of text")
	seed := fs.Int64("seed", 0, "make the generated data reproducible (0: random)")
	timeout := fs.Duration("timeout", 10*time.Second, "per-request time-out (the service waits 10 s)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkTarget(*to); err != nil {
		return err
	}
	for _, t := range types {
		if !catalog.IsKnown(t) {
			return usageError("--type %q is not an event type; valid types: %s", t, strings.Join(catalog.TypeNames(), ", "))
		}
	}
	switch {
	case *scenario != "" && (len(types) > 0 || *allTypes):
		return usageError("--scenario cannot be combined with --type or --all-types")
	case *scenario != "" && !slices.Contains(simulate.Scenarios(), *scenario):
		return usageError("--scenario %q is unknown; valid scenarios: %s", *scenario, strings.Join(simulate.Scenarios(), ", "))
	case *scenario == "" && len(types) == 0 && !*allTypes:
		return usageError("choose what to send: --type T (repeatable), --all-types, or --scenario NAME (%s)", strings.Join(simulate.Scenarios(), ", "))
	case *batch < 1:
		return usageError("--batch must be at least 1, got %d", *batch)
	case *dups < 0:
		return usageError("--duplicates cannot be negative, got %d", *dups)
	case *count < 1:
		return usageError("--count must be at least 1, got %d", *count)
	case *timeout <= 0:
		return usageError("--timeout must be positive, got %s", *timeout)
	}
	keys, err := secrets.resolve(env)
	if err != nil {
		return err
	}
	var secret []byte
	if len(keys) > 0 {
		secret = keys[0]
		if len(keys) > 1 {
			fmt.Fprintf(env.Stderr, "note: %d secrets given; deliveries are signed with the first\n", len(keys))
		}
	}

	g := simulate.New(*seed)
	opts := simulate.ScenarioOptions{Batch: *batch, Duplicates: *dups, Shuffle: *shuffle}
	var msgs []simulate.Message
	if *scenario != "" {
		for range *count {
			ms, err := g.Scenario(*scenario, opts)
			if err != nil {
				return usageError("%v", err)
			}
			msgs = append(msgs, ms...)
		}
	} else {
		if *allTypes {
			types = append(types, catalog.TypeNames()...)
		}
		var events []simulate.Event
		for range *count {
			for _, t := range types {
				events = append(events, g.Event(t))
			}
		}
		msgs = g.Batch(events, opts)
	}

	client := &http.Client{
		Timeout: *timeout,
		// The service does not follow redirects; a 3xx is an answer to report.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var failed, notOK, events int
	for i, m := range msgs {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted after %d of %d messages", i, len(msgs))
		}
		line := post(ctx, client, *to, secret, m)
		line.N, line.Of = i+1, len(msgs)
		events += len(m.Events)
		switch {
		case line.Error != "":
			failed++
		case line.Status < 200 || line.Status > 299:
			notOK++
		}
		if *jsonOut {
			b, _ := json.Marshal(line)
			fmt.Fprintf(env.Stdout, "%s\n", b)
		} else {
			printSendLine(env.Stdout, line)
		}
	}
	if !*jsonOut {
		fmt.Fprintf(env.Stdout, "sent %d messages (%d events) to %s: %d answered 2xx, %d other status, %d failed\n",
			len(msgs), events, *to, len(msgs)-notOK-failed, notOK, failed)
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d requests got no answer", failed, len(msgs))
	case notOK > 0 && !*ignore:
		return fmt.Errorf("%d of %d answers were not 2xx (use --ignore-status to exit 0 anyway)", notOK, len(msgs))
	}
	return nil
}

// checkTarget validates --to.
func checkTarget(to string) error {
	if to == "" {
		return usageError("--to is required: the consumer URL to POST deliveries to, for example http://127.0.0.1:8080/hooks")
	}
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("--to %q is not an http(s) URL with a host, for example http://127.0.0.1:8080/hooks", to)
	}
	return nil
}

// post sends one message and measures the answer.
func post(ctx context.Context, client *http.Client, to string, secret []byte, m simulate.Message) sendLine {
	line := sendLine{HookUUID: m.Hook.UUID}
	for _, e := range m.Events {
		line.Events = append(line.Events, sendEvent{UUID: e.UUID, Type: e.Type})
	}
	req, err := m.Request(ctx, to, secret)
	if err != nil {
		line.Error = err.Error()
		return line
	}
	line.Bytes = int(req.ContentLength)
	start := time.Now()
	resp, err := client.Do(req)
	line.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		line.Error = err.Error()
		return line
	}
	// Drain a little so the connection can be reused; the body is not shown.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	line.Status = resp.StatusCode
	return line
}

func printSendLine(w io.Writer, l sendLine) {
	width := len(fmt.Sprint(l.Of))
	types := make([]string, len(l.Events))
	for i, e := range l.Events {
		types[i] = e.Type
	}
	status := "error: " + l.Error
	if l.Error == "" {
		status = fmt.Sprintf("%d %s", l.Status, http.StatusText(l.Status))
	}
	fmt.Fprintf(w, "%*d/%d  %-24s %8.1f ms  hook %s  %s\n", width, l.N, l.Of, status, l.LatencyMS, l.HookUUID[:min(8, len(l.HookUUID))]+"…", strings.Join(types, ", "))
}
