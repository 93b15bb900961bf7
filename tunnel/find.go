package tunnel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Install help shown when cloudflared is missing. Hookscope cannot ship or
// download cloudflared itself, so the best it can do is say exactly how.
const (
	installLinux = "Linux: add Cloudflare's package repository (https://pkg.cloudflare.com/) and run " +
		"`sudo apt-get install cloudflared`, or download the .deb / binary for your architecture from " +
		"https://github.com/cloudflare/cloudflared/releases/latest"
	installMacOS   = "macOS: brew install cloudflared"
	installWindows = "Windows: winget install --id Cloudflare.cloudflared"
)

// InstallHelp returns how to install cloudflared on goos ("linux",
// "darwin", "windows"); any other value gets the help for all three.
func InstallHelp(goos string) string {
	switch goos {
	case "linux":
		return installLinux
	case "darwin":
		return installMacOS
	case "windows":
		return installWindows
	}
	return installLinux + "\n" + installMacOS + "\n" + installWindows
}

// NotInstalledError says there is no cloudflared to run: the configured
// path is wrong (Configured, and Problem says how), or there is none on
// PATH (Help tells the user how to install it). Everything else in
// Hookscope keeps working locally.
type NotInstalledError struct {
	// Binary is what was looked for: the configured path or "cloudflared".
	Binary string
	// Configured is set when Binary was given by the user (a flag, a
	// setting) rather than looked up on PATH by default.
	Configured bool
	// Problem says what is wrong with Binary, as a predicate: "does not
	// exist", "is a directory, not a program", "is not executable …",
	// "is not on PATH".
	Problem string
	// Help is the install help for the running OS.
	Help string
	// Err is the underlying lookup error.
	Err error
}

// Summary names what was looked for and what is wrong with it, without the
// install help: `cloudflared "/opt/cf" does not exist`.
func (e *NotInstalledError) Summary() string {
	if e.Binary == "cloudflared" && !e.Configured {
		return "cloudflared " + e.Problem
	}
	return fmt.Sprintf("cloudflared %q %s", e.Binary, e.Problem)
}

func (e *NotInstalledError) Error() string {
	if e.Configured {
		return e.Summary() + ": give the path of the cloudflared program, or none to use cloudflared from PATH"
	}
	return fmt.Sprintf("%s: install it to get a public URL; the receiver keeps working locally. %s", e.Summary(), e.Help)
}

// Unwrap returns the lookup error.
func (e *NotInstalledError) Unwrap() error { return e.Err }

// Version is a parsed cloudflared release number (releases are named
// YEAR.MONTH.PATCH).
type Version struct {
	Year, Month, Patch int
	// Raw is the whole first line of `cloudflared --version`.
	Raw string
}

// String returns the version as cloudflared prints it.
func (v Version) String() string {
	if v.Year == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d.%d", v.Year, v.Month, v.Patch)
}

// Less reports whether v is an older release than o.
func (v Version) Less(o Version) bool {
	if v.Year != o.Year {
		return v.Year < o.Year
	}
	if v.Month != o.Month {
		return v.Month < o.Month
	}
	return v.Patch < o.Patch
}

// MinVersion returns the oldest cloudflared Hookscope drives. Older
// releases predate the readiness endpoint and the --no-autoupdate/--metrics
// behaviour the supervisor relies on; the threshold is deliberately
// conservative rather than tied to one changelog entry. (A function, not a
// variable, so no package state can be changed.)
func MinVersion() Version { return Version{Year: 2022, Month: 1, Patch: 0} }

var versionRE = regexp.MustCompile(`cloudflared version (\d{4})\.(\d{1,2})\.(\d+)`)

// ParseVersion reads the output of `cloudflared --version`, e.g.
// "cloudflared version 2024.8.2 (built 2024-08-05-1234 UTC)".
func ParseVersion(out string) (Version, error) {
	line := strings.TrimSpace(out)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return Version{Raw: line}, fmt.Errorf("unrecognised cloudflared version output %q", truncate(line, 120))
	}
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	p, _ := strconv.Atoi(m[3])
	return Version{Year: y, Month: mo, Patch: p, Raw: line}, nil
}

// Find locates cloudflared: binary when set (a path, or a name looked up on
// PATH), else "cloudflared" on PATH. It returns a *NotInstalledError saying
// what is wrong when there is nothing to run.
func Find(binary, goos string) (string, error) {
	want := binary
	if want == "" {
		want = "cloudflared"
	}
	p, err := exec.LookPath(want)
	if err != nil {
		return "", &NotInstalledError{Binary: want, Configured: binary != "", Problem: lookupProblem(want, err), Help: InstallHelp(goos), Err: err}
	}
	return p, nil
}

// lookupProblem says why exec.LookPath found nothing to run at want.
func lookupProblem(want string, err error) string {
	if !strings.ContainsAny(want, `/\`) {
		return "is not on PATH"
	}
	fi, serr := os.Stat(want)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return "does not exist"
	case serr != nil:
		return fmt.Sprintf("cannot be read: %v", serr)
	case fi.IsDir():
		return "is a directory, not the cloudflared program"
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("is not executable (mode %s): make it executable with chmod +x", fi.Mode().Perm())
	}
	return fmt.Sprintf("cannot be run: %v", err)
}

// ReadVersion runs `path --version` and parses its answer.
func ReadVersion(ctx context.Context, path string) (Version, error) {
	return readVersion(ctx, path, nil)
}

// readVersion is ReadVersion with extra environment (Config.Env), so the
// version check sees the same environment as the tunnel run.
func readVersion(ctx context.Context, path string, env []string) (Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--version")
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Version{}, fmt.Errorf("%s --version: exited with code %d: %s", path, ee.ExitCode(), truncate(strings.TrimSpace(out.String()), 200))
		}
		return Version{}, fmt.Errorf("%s --version: %w", path, err)
	}
	return ParseVersion(out.String())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
