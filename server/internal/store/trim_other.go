//go:build !linux

package store

// DropMapped is a no-op where madvise is not used.
func (s *Store) DropMapped() {}

// dropMapped is a no-op where madvise is not used.
func (s *Store) dropMapped() {}
