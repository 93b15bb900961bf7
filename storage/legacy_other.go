//go:build !unix

package storage

// legacyInboxInUse: older versions kept no inbox off Unix.
func legacyInboxInUse(string) bool { return false }
