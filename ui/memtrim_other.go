//go:build !(linux && cgo)

package ui

// trimCHeap has nothing to do without glibc's malloc_trim.
func trimCHeap() {}
