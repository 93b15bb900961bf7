// Package bindaddr tells why a listening socket could not be opened, in
// the terms a user acts on.
package bindaddr

import (
	"errors"
	"strings"
	"syscall"
)

// InUse reports whether err says the address is already bound by another
// socket. Windows reports it in words that no syscall constant matches.
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) ||
		strings.Contains(err.Error(), "address already in use") ||
		strings.Contains(err.Error(), "Only one usage of each socket address"))
}
