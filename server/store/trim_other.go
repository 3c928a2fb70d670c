//go:build !linux

package store

// dropMapped is a no-op where madvise is not used.
func (s *Store) dropMapped() {}
