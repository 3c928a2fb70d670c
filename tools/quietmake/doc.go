// Package quietmake tests scripts/quiet-make, the runner behind `make test`:
// one line per target, the whole log of a failing one, a final
// "N passed, N failed" and the first failing exit status. It runs the real
// script with the real make on a small Makefile in a temporary directory.
package quietmake
