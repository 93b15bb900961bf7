package send

import (
	"context"
	"net/http"

	"github.com/hookscope/hookscope/inspector/simulate"
)

// Line is one message sent, as `hookscope send --json` prints it.
type Line = sendLine

// Post sends one generated message to the consumer at to, signed with
// secret when given, and measures the answer: what `hookscope send` does
// per message, and what the agent interface's send tool calls.
func Post(ctx context.Context, client *http.Client, to string, secret []byte, m simulate.Message) Line {
	return post(ctx, client, to, secret, m)
}
