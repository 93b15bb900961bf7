package tunnel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindSaysWhatIsWrong: a cloudflared that cannot be run is named with
// what is wrong with it, for a configured path as for PATH, and only the
// PATH case carries install steps.
func TestFindSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runnable := filepath.Join(dir, "runnable")
	if err := os.WriteFile(runnable, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // an empty PATH: no cloudflared on it
	for _, tc := range []struct {
		name, binary string
		configured   bool
		want         []string
		help         bool
	}{
		{"missing file", filepath.Join(dir, "nope"), true, []string{filepath.Join(dir, "nope"), "does not exist"}, false},
		{"directory", dir, true, []string{dir, "is a directory"}, false},
		{"not executable", plain, true, []string{plain, "is not executable", "-rw-r--r--", "chmod +x"}, false},
		{"a name not on PATH", "cloudflared-2024", true, []string{`"cloudflared-2024" is not on PATH`}, false},
		{"default, not on PATH", "", false, []string{"cloudflared is not on PATH", "install it"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Find(tc.binary, "linux")
			var ni *NotInstalledError
			if !errors.As(err, &ni) {
				t.Fatalf("Find(%q) = %v, want a *NotInstalledError", tc.binary, err)
			}
			if ni.Configured != tc.configured {
				t.Errorf("Configured = %v", ni.Configured)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if has := strings.Contains(err.Error(), "pkg.cloudflare.com"); has != tc.help {
				t.Errorf("install help in %q: %v, want %v", err, has, tc.help)
			}
		})
	}
	if p, err := Find(runnable, "linux"); err != nil || p != runnable {
		t.Fatalf("Find(runnable) = %q, %v", p, err)
	}
}

// TestResolveRefusesWhatIsNotCloudflared: a program that does not say it
// is cloudflared, cannot run here, or is too old is refused with what is
// wrong, as a *NotInstalledError (the receiver keeps running; the tunnel
// says why), and the supervisor does not start it.
func TestResolveRefusesWhatIsNotCloudflared(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	silent := script("silent", "#!/bin/sh\nexit 0\n")
	chatty := script("chatty", "#!/bin/sh\necho 'usage: chatty [-v]'\nexit 2\n")
	old := script("old", "#!/bin/sh\necho 'cloudflared version 2021.3.1 (built 2021-03-01-0000 UTC)'\n")
	dev := script("dev", "#!/bin/sh\necho 'cloudflared version DEV (built unknown)'\n")
	garbage := script("garbage", "\x7fELF\x02\x01\x01\x00garbage that is no program for this machine")
	for _, tc := range []struct {
		name, binary string
		want         []string
	}{
		{"prints nothing", silent, []string{silent, "is not cloudflared", "printed nothing", "give the path of the cloudflared program"}},
		{"another program", chatty, []string{"is not cloudflared", "exited with code 2", "usage: chatty"}},
		{"too old", old, []string{"is version 2021.3.1, older than 2022.1.0", "update cloudflared"}},
		{"exec format error", garbage, []string{"cannot be run on this machine", "exec format error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Resolve(t.Context(), tc.binary, "linux", nil)
			var ni *NotInstalledError
			if !errors.As(err, &ni) {
				t.Fatalf("Resolve(%q) = %v, want a *NotInstalledError", tc.binary, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			s := New(Config{Binary: tc.binary, LocalURL: "http://127.0.0.1:9"})
			if err := s.Start(t.Context()); !errors.As(err, &ni) {
				t.Fatalf("Start = %v", err)
			}
			if st := s.State(); st.State != NotInstalled || st.PID != 0 || st.Reason != err.Error() || !logsContain(s, ni.Problem) {
				t.Fatalf("status %+v, log %q", st, s.Logs())
			}
		})
	}
	if _, v, err := Resolve(t.Context(), dev, "linux", nil); err != nil || v.String() != "unknown" {
		t.Fatalf("a cloudflared built without a release number: %v %v", v, err)
	}
	if _, err := os.Stat("/bin/true"); err == nil {
		if _, _, err := Resolve(t.Context(), "/bin/true", "linux", nil); err == nil || !strings.Contains(err.Error(), "is not cloudflared") {
			t.Fatalf("/bin/true accepted as cloudflared: %v", err)
		}
	}
}

// TestFindNotExecutableOnPATH: a cloudflared on PATH that cannot be run is
// named, with the fix, not reported as missing.
func TestFindNotExecutableOnPATH(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cloudflared")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()+string(os.PathListSeparator)+dir)
	_, err := Find("", "linux")
	var ni *NotInstalledError
	if !errors.As(err, &ni) || ni.Path != p {
		t.Fatalf("Find = %v", err)
	}
	for _, w := range []string{p, "is on PATH but not executable (mode -rw-r--r--)", "chmod +x " + p} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "not on PATH") {
		t.Errorf("error %q says it is not on PATH", err)
	}
}
