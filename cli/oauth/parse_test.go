package oauth

import (
	"context"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/oauthflow"
)

// TestParseCall checks `oauth call` arguments and flags -> StepOptions,
// without calling.
func TestParseCall(t *testing.T) {
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(nil)}
	clitest.ParseTable(t, func(runF func(context.Context, *StepOptions) error) *cobra.Command {
		return NewStepCmd(env, "call", runF)
	}, []clitest.ParseCase[StepOptions]{
		// The example: a path, then a flag.
		{Args: []string{"/v1/medias/abc", "--method", "header"}, Want: func(o *StepOptions) bool {
			return o.Path == "/v1/medias/abc" && o.Media == "" && reflect.DeepEqual(o.methods, []oauthflow.TokenMethod{oauthflow.MethodHeader})
		}},
		{Args: []string{"k3j9x2m7pq", "--profile", "demo", "--method", "all", "--curl"}, Want: func(o *StepOptions) bool {
			return o.Media == "k3j9x2m7pq" && o.Path == "" && o.Profile == "demo" && len(o.methods) == 3 && o.Curl
		}},
		{Args: []string{"https://api.example.com/v1/medias/x"}, Want: func(o *StepOptions) bool { return o.Path == "https://api.example.com/v1/medias/x" }},
		{Args: []string{"--media", "abc", "--http-method", "PUT", "--data", "name=x", "--content-type", "application/x-www-form-urlencoded"}, Want: func(o *StepOptions) bool {
			return o.Media == "abc" && o.HTTPMethod == "PUT" && o.Data == "name=x"
		}},
		{Args: []string{}, Err: "give what to call"},
		{Args: []string{"/v1/a", "--path", "/v1/b"}, Err: "disagree"},
		{Args: []string{"abc", "--method", "carrier-pigeon"}, Err: "--method"},
		{Args: []string{"a", "b"}, Err: "too many arguments"},
	})
}

// TestParseSteps checks the other steps' flags -> StepOptions.
func TestParseSteps(t *testing.T) {
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(nil)}
	for _, step := range []string{"login", "authorize", "exchange", "refresh"} {
		t.Run(step, func(t *testing.T) {
			clitest.ParseTable(t, func(runF func(context.Context, *StepOptions) error) *cobra.Command {
				return NewStepCmd(env, step, runF)
			}, []clitest.ParseCase[StepOptions]{
				{Args: []string{"--profile", "demo", "--scope", "media:read", "--scope", "a,b", "--json"}, Want: func(o *StepOptions) bool {
					return o.Step == step && o.Profile == "demo" && reflect.DeepEqual(o.Scopes, []string{"media:read", "a,b"}) && o.JSON
				}},
				{Args: []string{"--save"}, Err: "--save needs --profile"},
				{Args: []string{"stray"}, Err: "unexpected argument"},
			})
		})
	}
	clitest.ParseTable(t, func(runF func(context.Context, *StepOptions) error) *cobra.Command {
		return NewStepCmd(env, "login", runF)
	}, []clitest.ParseCase[StepOptions]{
		{Args: []string{"--no-browser", "--pkce", "--timeout", "20s", "--placement", "basic"}, Want: func(o *StepOptions) bool {
			return o.NoBrowser && o.PKCE && o.Timeout == 20*time.Second && o.placement == oauthflow.Placement("basic")
		}},
		{Args: []string{"--placement", "nowhere"}, Err: "--placement"},
		{Args: []string{"--code", "x"}, Err: "unknown flag: --code"},
	})
}
