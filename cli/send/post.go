package send

import "github.com/hookscope/hookscope/inspector/simulate"

// Line is one message sent, as `hookscope send --json` prints it.
type Line = sendLine

// LineOf is one answer of simulate.Send as `hookscope send --json` prints
// it (the agent interface's send tool reports the same lines).
func LineOf(a simulate.Answer) Line { return newSendLine(a) }
