package prove

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoFyneLocaleNoise: under the locales of containers and CI runners the
// binary's commands print only their own output. Fyne's locale lookup used
// to log a "Fyne error: Error parsing user locale C" on every command under
// LANG=C.UTF-8 (see internal/clocale).
func TestNoFyneLocaleNoise(t *testing.T) {
	bin := hookscopeBin(t)
	for _, env := range [][]string{
		{"LANG=C.UTF-8"},
		{"LC_ALL=C.utf8", "LANG=en_US.UTF-8"},
		{"LANG=POSIX.UTF-8"},
		{"LANG=C"},
		{"LANG=en_US.UTF-8"},
		{},
	} {
		cmd := exec.Command(bin, "version")
		for _, kv := range os.Environ() {
			switch strings.SplitN(kv, "=", 2)[0] {
			case "LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES":
			default:
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v hookscope version: %v\n%s", env, err, stderr.String())
		}
		if !strings.HasPrefix(string(out), "hookscope ") {
			t.Errorf("%v: stdout %q", env, out)
		}
		if stderr.Len() != 0 {
			t.Errorf("%v: stderr is not empty:\n%s", env, stderr.String())
		}
	}
}
