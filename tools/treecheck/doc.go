// Package treecheck holds the tests that keep the repository's tree to its
// own rules, across every module: the package tables of ARCHITECTURE.md
// name every Go package of the tree once and nothing else; no function id
// is written as a literal outside the ids files, and no verdict code
// outside sdk-go/rules; docs, mk files, comments and test names cite
// features, not issue numbers; README.md stays short and links every docs
// page. It has no code of its own: `go test ./tools/treecheck` is the
// check.
package treecheck
