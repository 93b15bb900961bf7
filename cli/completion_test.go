package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/storage"
)

// asCLI makes the test binary act as hookscope when it is started with
// this variable set: the completion script runs it as `hookscope
// __complete …`, the way a shell runs the installed binary.
const asCLI = "HOOKSCOPE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// bashCompletionLib is Debian's bash-completion, which the generated bash
// script relies on (_get_comp_words_by_ref); make test installs it.
const bashCompletionLib = "/usr/share/bash-completion/bash_completion"

// TestBashCompletion sources `hookscope completion bash` in a real bash
// with bash-completion loaded, sets COMP_WORDS as bash does for a <TAB>
// and reads COMPREPLY: what a user sees when pressing Tab.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	if _, err := os.Stat(bashCompletionLib); err != nil {
		t.Fatalf("%s is missing: install Debian's bash-completion (make deps-test does)", bashCompletionLib)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(self, filepath.Join(bin, "hookscope")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	db := clitest.SeedStore(t)
	st, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"demo", "staging"} {
		if err := st.SaveProfile(context.Background(), oauthflow.Profile{Name: name, BaseURL: "http://127.0.0.1:8790", ClientID: "c", RedirectURI: "http://127.0.0.1:8765/callback"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	// compopt complains outside a real completion (stderr, ignored);
	// COMP_TYPE 9 is a plain <TAB>.
	script := `source ` + bashCompletionLib + `
source <(hookscope completion bash)
line=$1
COMP_LINE=$line
COMP_POINT=${#line}
read -ra COMP_WORDS <<< "$line"
[[ $line == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_TYPE=9
__start_hookscope hookscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
for r in "${COMPREPLY[@]}"; do echo "${r%% *}"; done
`
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"hookscope li", []string{"list", "listen"}},
		{"hookscope oauth ca", []string{"call"}},
		{"hookscope listen --ad", []string{"--addr"}},
		{"hookscope completion ", []string{"bash", "fish", "powershell", "zsh"}},
		{"hookscope send --type media.re", []string{"media.ready"}},
		{"hookscope export x.har --format n", []string{"ndjson"}},
		{"hookscope listen --answer ", []string{"200", "500", "close", "hang"}},
		{"hookscope listen --forward-mode ", []string{"ack", "pass-through"}},
		{"hookscope oauth login --db " + db + " --profile ", []string{"demo", "staging"}},
		{"hookscope replay --db " + db + " ", []string{"3", "2", "1"}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			cmd := exec.Command(bash, "-c", script, "complete", tc.line)
			cmd.Env = append(os.Environ(), asCLI+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "COLUMNS=200")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v\n%s%s", err, out, stderr.String())
			}
			got := strings.Fields(string(out))
			if !sameSet(got, tc.want) {
				t.Fatalf("completions %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, ".config")); err == nil {
		t.Error("completing created the default store")
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
