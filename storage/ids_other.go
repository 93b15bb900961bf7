//go:build !unix

package storage

import "errors"

// openIDs reports errors.ErrUnsupported: without a shared mapping each
// direct insert takes its id inside its transaction (see ids.go).
func openIDs(path string) (idSource, error) { return nil, errors.ErrUnsupported }
