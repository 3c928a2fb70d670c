package store

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// DropMapped is dropMapped for a caller that just read much of the file
// (a start-up pass over many keys): no-op for a memory-only store.
func (s *Store) DropMapped() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db != nil && !s.closed {
		s.dropMapped()
	}
}

// dropMapped takes the file's pages out of the process's resident set
// (madvise MADV_DONTNEED on bbolt's read-only shared map). They stay in the
// kernel's page cache, so a later read of them is a minor fault, not disk
// I/O; it runs inside a read transaction, which keeps bbolt from remapping
// the file meanwhile.
func (s *Store) dropMapped() {
	_ = s.db.View(func(tx *bolt.Tx) error {
		size := uintptr(tx.Size())
		if size == 0 {
			return nil
		}
		// The map is page-aligned and at least the file's size long.
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, s.db.Info().Data, size, syscall.MADV_DONTNEED)
		return nil
	})
}
