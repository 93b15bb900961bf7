package main

import (
	"fmt"
	"os"

	"github.com/hookscope/hookscope/cli"
	"github.com/hookscope/hookscope/ui"
)

// runGUI opens the desktop app. HOOKSCOPE_DB points it at another store
// file (demos, screenshots, smoke tests) without touching the real one.
func runGUI() int {
	if err := ui.Run(ui.Config{DBPath: os.Getenv("HOOKSCOPE_DB"), Version: cli.Version}); err != nil {
		fmt.Fprintf(os.Stderr, "hookscope: %v\n", err)
		return 1
	}
	return 0
}
