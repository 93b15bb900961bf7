// Command hookscope inspects the video service's webhook deliveries and
// walks its OAuth flow. Without arguments it opens the desktop app; with a
// subcommand it runs headless.
package main

import (
	"os"

	"github.com/hookscope/hookscope/cli"
)

func main() {
	if len(os.Args) == 1 {
		os.Exit(runGUI())
	}
	os.Exit(cli.Main(os.Args[1:]))
}
