// Command hookscope inspects the video service's webhook deliveries and
// walks its OAuth flow. Without arguments it opens the desktop app; with a
// subcommand it runs headless.
package main

import (
	"os"

	// First, so it runs before Fyne's locale lookup: see its doc.
	_ "github.com/hookscope/hookscope/internal/clocale"

	"github.com/hookscope/hookscope/cli"
)

func main() {
	if len(os.Args) == 1 {
		os.Exit(runGUI())
	}
	os.Exit(cli.Main(os.Args[1:]))
}
