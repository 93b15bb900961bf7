package tunnel

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
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

// NotInstalledError says there is no usable cloudflared: none was found
// (on PATH or at the configured path), or what was found cannot be run, is
// not cloudflared, or is too old. Problem says which, Fix what to do.
// Everything else in Hookscope keeps working locally.
type NotInstalledError struct {
	// Binary is what was looked for: the configured path or "cloudflared".
	Binary string
	// Configured is set when Binary was given by the user (a flag, a
	// setting) rather than looked up on PATH by default.
	Configured bool
	// Path is the file that was found and refused; "" when none was found.
	Path string
	// Problem says what is wrong, as a predicate: "does not exist", "is not
	// on PATH", "is not executable (mode -rw-r--r--)", "is not cloudflared:
	// …", "is version 2021.3.1, older than 2022.1.0 …".
	Problem string
	// Fix says what to do, when the problem has its own remedy (chmod +x,
	// update); "" means the general one (give another path, or install).
	Fix string
	// Help is the install help for the running OS.
	Help string
	// Err is the underlying error.
	Err error
}

// Summary names what was looked for and what is wrong with it, without the
// remedy: `cloudflared "/opt/cf" does not exist`, `cloudflared is not on
// PATH`.
func (e *NotInstalledError) Summary() string {
	switch {
	case e.Path != "":
		return fmt.Sprintf("cloudflared %q %s", e.Path, e.Problem)
	case e.Binary == "cloudflared" && !e.Configured:
		return "cloudflared " + e.Problem
	}
	return fmt.Sprintf("cloudflared %q %s", e.Binary, e.Problem)
}

func (e *NotInstalledError) Error() string {
	switch {
	case e.Fix != "":
		return e.Summary() + ": " + e.Fix
	case e.Configured:
		return e.Summary() + ": give the path of the cloudflared program, or none to use cloudflared from PATH"
	}
	return fmt.Sprintf("%s: install it to get a public URL; the receiver keeps working locally. %s", e.Summary(), e.Help)
}

// Unwrap returns the underlying error.
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
// what is wrong when there is nothing to run. It only looks at files, so it
// is cheap enough for a UI to call; Resolve also runs the program.
func Find(binary, goos string) (string, error) {
	want := binary
	if want == "" {
		want = "cloudflared"
	}
	p, err := exec.LookPath(want)
	if err != nil {
		ni := &NotInstalledError{Binary: want, Configured: binary != "", Help: InstallHelp(goos), Err: err}
		ni.Path, ni.Problem, ni.Fix = lookupProblem(want, err)
		return "", ni
	}
	return p, nil
}

// lookupProblem says why exec.LookPath found nothing to run at want: the
// file found (if any), what is wrong with it and, when it has its own
// remedy, what to do.
func lookupProblem(want string, err error) (path, problem, fix string) {
	if !strings.ContainsAny(want, `/\`) {
		// LookPath skips files it cannot run; one of them is what the user
		// installed, and "not on PATH" would send them looking elsewhere.
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			cand := filepath.Join(cmp.Or(dir, "."), want)
			if fi, serr := os.Stat(cand); serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 {
				return cand, fmt.Sprintf("is on PATH but not executable (mode %s)", fi.Mode().Perm()), "make it executable with chmod +x " + cand
			}
		}
		return "", "is not on PATH", ""
	}
	fi, serr := os.Stat(want)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return "", "does not exist", ""
	case serr != nil:
		return "", fmt.Sprintf("cannot be read: %v", serr), ""
	case fi.IsDir():
		return "", "is a directory, not the cloudflared program", ""
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Sprintf("is not executable (mode %s)", fi.Mode().Perm()), "make it executable with chmod +x"
	}
	return "", fmt.Sprintf("cannot be run: %v", err), ""
}

// versionTimeout bounds `cloudflared --version`; the real one answers in
// milliseconds.
const versionTimeout = 10 * time.Second

// Resolve finds cloudflared (as Find) and checks it is one Hookscope can
// drive: it runs `cloudflared --version` and refuses a program that cannot
// run here, that does not say it is cloudflared (so /bin/true is not taken
// for it), or that is older than MinVersion. Every refusal is a
// *NotInstalledError. env is extra environment for the run (KEY=VALUE).
// A cloudflared built without a release number ("cloudflared version DEV")
// is accepted with an unknown version.
func Resolve(ctx context.Context, binary, goos string, env []string) (string, Version, error) {
	path, err := Find(binary, goos)
	if err != nil {
		return "", Version{}, err
	}
	refuse := func(problem, fix string, err error) (string, Version, error) {
		return "", Version{}, &NotInstalledError{Binary: cmp.Or(binary, "cloudflared"), Configured: binary != "", Path: path,
			Problem: problem, Fix: fix, Help: InstallHelp(goos), Err: err}
	}
	out, err := runVersion(ctx, path, env)
	var ee *exec.ExitError
	switch {
	case errors.Is(err, syscall.ENOEXEC):
		return refuse("cannot be run on this machine (exec format error: a program for another system or processor?)",
			fmt.Sprintf("install the cloudflared built for %s/%s. %s", goos, runtime.GOARCH, InstallHelp(goos)), err)
	case errors.Is(err, fs.ErrPermission):
		return refuse("cannot be run (permission denied)", "make it executable with chmod +x, on a file system that allows programs", err)
	case errors.Is(err, context.DeadlineExceeded):
		return refuse(fmt.Sprintf("did not answer `--version` within %s", versionTimeout), notCloudflaredFix(binary, goos), err)
	case errors.As(err, &ee):
		return refuse(fmt.Sprintf("is not cloudflared: `%s --version` exited with code %d (%s)", filepath.Base(path), ee.ExitCode(), quoteOutput(out)),
			notCloudflaredFix(binary, goos), err)
	case err != nil:
		return refuse(fmt.Sprintf("cannot be run: %v", err), notCloudflaredFix(binary, goos), err)
	}
	v, err := ParseVersion(out)
	if err != nil {
		if !strings.Contains(out, "cloudflared version") {
			return refuse(fmt.Sprintf("is not cloudflared: `%s --version` printed %s, not \"cloudflared version …\"", filepath.Base(path), quoteOutput(out)),
				notCloudflaredFix(binary, goos), err)
		}
		return path, v, nil
	}
	if v.Less(MinVersion()) {
		return refuse(fmt.Sprintf("is version %s, older than %s, the oldest Hookscope drives", v, MinVersion()),
			"update cloudflared. "+InstallHelp(goos), nil)
	}
	return path, v, nil
}

// notCloudflaredFix is what to do when the program found is not a
// cloudflared that runs here.
func notCloudflaredFix(binary, goos string) string {
	if binary != "" {
		return "give the path of the cloudflared program, or none to use cloudflared from PATH"
	}
	return "install cloudflared ahead of it on PATH. " + InstallHelp(goos)
}

// quoteOutput shows a program's output in a message: quoted, one line,
// short; "nothing" when empty.
func quoteOutput(out string) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return "nothing"
	}
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = out[:i] + " …"
	}
	return strconv.Quote(truncate(out, 80))
}

// ReadVersion runs `path --version` and parses its answer.
func ReadVersion(ctx context.Context, path string) (Version, error) {
	out, err := runVersion(ctx, path, nil)
	if err != nil {
		return Version{}, fmt.Errorf("%s --version: %w", path, err)
	}
	return ParseVersion(out)
}

// runVersion runs `path --version` with extra environment (so the check
// sees the environment of the tunnel run) and returns its output.
func runVersion(ctx context.Context, path string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--version")
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = &out
	cmd.Stderr = &out
	// A wrapper script's own children must not hold the output open.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return out.String(), err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
