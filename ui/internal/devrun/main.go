// Command devrun opens the Hookscope window without the rest of the CLI,
// for working on the UI and for scripts/screenshots.sh; `devrun send URL`
// posts the "Send test deliveries" set to URL.
//
//	go run -tags migrated_fynedo ./ui/internal/devrun --db /tmp/hooks.db
//	WEBHOOK_SECRET=s3cret devrun --secret-env WEBHOOK_SECRET send http://127.0.0.1:8787/webhooks
//
// HOOKSCOPE_PPROF=127.0.0.1:6060 serves net/http/pprof there, for
// measuring the window's memory (docs/ui.md); HOOKSCOPE_UI_TRACE=1 writes
// the window's draw timings to stderr (scripts/bench-window.sh).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // served only when HOOKSCOPE_PPROF is set
	"os"

	"github.com/hookscope/hookscope/ui"
)

func main() {
	db := flag.String("db", os.Getenv("HOOKSCOPE_DB"), "store file (default: the app's store)")
	secretEnv := flag.String("secret-env", "", "environment variable holding the webhook secret")
	addr := flag.String("addr", "", "listen here this run instead of the saved address (host:port)")
	flag.Parse()
	if addr := os.Getenv("HOOKSCOPE_PPROF"); addr != "" {
		go func() {
			if err := http.ListenAndServe(addr, nil); err != nil {
				fmt.Fprintln(os.Stderr, "devrun: pprof:", err)
			}
		}()
	}
	var secrets [][]byte
	if *secretEnv != "" {
		if s := os.Getenv(*secretEnv); s != "" {
			secrets = [][]byte{[]byte(s)}
		}
	}
	if flag.NArg() == 2 && flag.Arg(0) == "send" {
		n, err := ui.SendTestDeliveries(context.Background(), flag.Arg(1), secrets)
		fmt.Printf("sent %d deliveries\n", n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "devrun:", err)
			os.Exit(1)
		}
		return
	}
	cfg := ui.Config{DBPath: *db, Version: "dev", Secrets: secrets, ListenAddr: *addr}
	if os.Getenv("HOOKSCOPE_UI_TRACE") != "" {
		cfg.Trace = os.Stderr
	}
	if err := ui.Run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "devrun:", err)
		os.Exit(1)
	}
}
