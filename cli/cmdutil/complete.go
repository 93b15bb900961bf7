package cmdutil

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/storage"
)

// CompleteFunc is a cobra completion function (ValidArgsFunction or a
// flag's completion).
type CompleteFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

// CompleteFixed completes from a fixed list of "value\tdescription" pairs
// (a value alone is fine too).
func CompleteFixed(values ...string) CompleteFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteEventTypes completes the 17 event types, each with when it occurs.
func CompleteEventTypes(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, t := range catalog.Types() {
		out = append(out, cobra.CompletionWithDesc(t.Name, t.OccursWhen))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// CompleteExportFormats completes the export formats, saying what each
// writes.
func CompleteExportFormats(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, f := range export.Formats() {
		what := "a file"
		if f.IsFolder() {
			what = "a folder"
		}
		out = append(out, cobra.CompletionWithDesc(string(f), what))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// CompleteProfiles completes the OAuth profile names saved in the store
// that --db names (or the default store).
func CompleteProfiles(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	withStore(cmd, func(ctx context.Context, db *storage.DB) {
		ps, err := db.ListProfiles(ctx)
		if err != nil {
			return
		}
		for _, p := range ps {
			out = append(out, cobra.CompletionWithDesc(p.Name, p.BaseURL))
		}
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// recentDeliveries is how many delivery ids completion offers.
const recentDeliveries = 30

// CompleteDeliveryIDs completes the newest stored delivery ids, each with
// its first event type, arrival time and signature verdict.
func CompleteDeliveryIDs(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	withStore(cmd, func(ctx context.Context, db *storage.DB) {
		ss, err := db.List(ctx, storage.Filter{}, recentDeliveries)
		if err != nil {
			return
		}
		for _, s := range ss {
			what := s.FirstType
			if what == "" {
				what = "no event"
			}
			if s.EventCount > 1 {
				what += fmt.Sprintf(" +%d", s.EventCount-1)
			}
			desc := fmt.Sprintf("%s, %s, signature %s", what, s.ReceivedAt.Local().Format(time.DateTime), s.Signature)
			out = append(out, cobra.CompletionWithDesc(strconv.FormatInt(s.ID, 10), desc))
		}
	})
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// withStore runs fn with the store --db names (or the default one) when
// that file exists: completing never creates a store.
func withStore(cmd *cobra.Command, fn func(context.Context, *storage.DB)) {
	path, _ := cmd.Flags().GetString("db")
	db, err := OpenExistingStore(nil, path)
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	fn(ctx, db)
}

// RegisterSelectionCompletion completes the selection flags of cmd (see
// AddSelectionFlags): --id from the store, --type from the catalogue,
// --signature from the four verdicts.
func RegisterSelectionCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("id", CompleteDeliveryIDs)
	_ = cmd.RegisterFlagCompletionFunc("type", CompleteEventTypes)
	_ = cmd.RegisterFlagCompletionFunc("signature", CompleteFixed("valid", "invalid", "missing", "unverified"))
}
