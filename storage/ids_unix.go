//go:build unix

package storage

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// sharedIDs is the counter file mapped into this process.
type sharedIDs struct {
	f   *os.File
	mem []byte
	n   *atomic.Int64
}

// openIDs maps the counter file at path, creating it (0600) if needed.
func openIDs(path string) (idSource, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open id counter: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() < 8 {
		// A new file: 8 zero bytes. (Truncating a file another process
		// already grew to 8 bytes would not change it either.)
		err = f.Truncate(8)
	}
	var mem []byte
	if err == nil {
		mem, err = syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("map id counter %s: %w", path, err)
	}
	// The mapping is page-aligned, so the counter is 8-byte aligned, as
	// atomic operations need; they are atomic across processes sharing
	// the page.
	return &sharedIDs{f: f, mem: mem, n: (*atomic.Int64)(unsafe.Pointer(&mem[0]))}, nil
}

func (s *sharedIDs) next() int64 { return s.n.Add(1) }

func (s *sharedIDs) raise(floor int64) {
	for {
		cur := s.n.Load()
		if cur >= floor || s.n.CompareAndSwap(cur, floor) {
			return
		}
	}
}

func (s *sharedIDs) close() error {
	err := syscall.Munmap(s.mem)
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
