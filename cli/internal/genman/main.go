// Command genman writes a man page (section 1) for every hookscope
// command, generated from the same command tree the binary runs, with
// cobra's doc package: `go run ./cli/internal/genman -out DIR -version V`.
// The date is SOURCE_DATE_EPOCH when set (reproducible builds), else now.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/hookscope/hookscope/cli"
)

func main() {
	out := flag.String("out", "man", "folder to write the pages to (created if missing)")
	version := flag.String("version", cli.Version, "version named in the pages' footer")
	flag.Parse()
	if err := run(*out, *version); err != nil {
		fmt.Fprintf(os.Stderr, "genman: %v\n", err)
		os.Exit(1)
	}
}

func run(out, version string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	root := cli.NewRootCmd(&cli.Env{Stdin: os.Stdin, Stdout: io.Discard, Stderr: io.Discard, Getenv: os.Getenv, Version: version})
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "HOOKSCOPE", Section: "1", Source: "Hookscope " + version, Manual: "Hookscope Manual"}
	if err := doc.GenManTree(root, header, out); err != nil {
		return fmt.Errorf("write man pages: %w", err)
	}
	return nil
}
