// Command oauthbrowser plays the end user's browser for
// scripts/screenshots-oauth.sh: it reads the authorize URL the window just
// built from the store, logs in to the sandbox, approves (or denies) and
// delivers the redirect to the window's callback listener.
//
//	oauthbrowser --db /tmp/hooks.db [--profile sandbox] [--deny]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/hookscope/hookscope/sandbox"
	"github.com/hookscope/hookscope/storage"
)

func main() {
	dbPath := flag.String("db", os.Getenv("HOOKSCOPE_DB"), "the window's store file")
	profile := flag.String("profile", "sandbox", "profile whose latest authorize URL to open")
	email := flag.String("email", "owner@example.com", "demo user")
	password := flag.String("password", "owner", "demo user's password")
	deny := flag.Bool("deny", false, "press Deny instead of Authorize")
	flag.Parse()
	if err := run(*dbPath, *profile, *email, *password, *deny); err != nil {
		fmt.Fprintln(os.Stderr, "oauthbrowser:", err)
		os.Exit(1)
	}
}

func run(dbPath, profile, email, password string, deny bool) error {
	db, err := storage.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := db.LatestFlowState(ctx, profile)
	if err != nil {
		return err
	}
	if st.AuthorizeURL == "" {
		return fmt.Errorf("profile %q has no authorize URL yet; press Authorize first", profile)
	}
	b := sandbox.NewBrowser(email, password)
	b.Deny = deny
	cb, err := b.Authorize(ctx, st.AuthorizeURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cb.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("deliver the callback: %w", err)
	}
	resp.Body.Close()
	fmt.Println("callback delivered:", resp.Status)
	return nil
}
