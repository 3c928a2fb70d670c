// Package installpackages tests scripts/install-packages, the step every
// *-deps make target runs (mk/deps.mk): apt-get install of what a test target
// needs, and where apt-get or sudo is unavailable a "not run" line and a
// record that lets the tests skip instead of failing. It runs the real script
// with bash; apt-get and sudo are stand-ins on PATH that record their
// arguments (nothing is installed).
package installpackages
