// Package clocale keeps Fyne quiet under the "C.UTF-8" locale.
//
// Debian and Ubuntu containers, CI runners and many minimal installs set
// LANG=C.UTF-8. Fyne's lang package reads the locale in its init, cannot
// parse "C" as a language tag, and logs a three-line "Fyne error" to stderr
// of every hookscope command — the CLI included, since the binary links the
// GUI. The locale library behind it treats plain "C" as "no locale", but
// not "C.UTF-8"; giving it LANGUAGE=en answers its question (English, as it
// would fall back to anyway) without touching LC_* or LANG, so the
// character set of hookscope and of the programs it starts stays as is
// (GNU gettext ignores LANGUAGE under the C locale, so children see no
// change either).
//
// It must run before Fyne's lang package initialises: main imports it
// first, and Go initialises an imported package that depends only on the
// standard library before lang, whose dependencies (go-locale, go-i18n)
// sort after this package's path (the spec's package initialisation order).
// internal/prove's TestNoFyneLocaleNoise checks the result on the binary.
package clocale

import (
	"os"
	"strings"
)

func init() {
	if os.Getenv("LANGUAGE") != "" {
		return
	}
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if isCLocale(v) {
			os.Setenv("LANGUAGE", "en")
		}
		return
	}
}

// isCLocale reports the C/POSIX locale with an encoding ("C.UTF-8",
// "POSIX.utf8"); bare "C" and "POSIX" are already understood as no locale.
func isCLocale(v string) bool {
	lang, _, found := strings.Cut(v, ".")
	return found && (lang == "C" || lang == "POSIX")
}
