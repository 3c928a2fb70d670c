# What a user installs and runs (issue 17): SDK artifacts, the real-engine interop
# target, and the prerequisites that make each target work alone on a fresh clone.
# Included by the root Makefile.
#
#   make dist               dist/: the npm tarball (npm pack) and the Python wheel + sdist
#   make test-dist          install each artifact into a clean temporary project (and the Go
#                           module through go.work) and run its example against a fresh
#                           `skills --standalone`; every iii:// link an example publishes
#                           must resolve
#   make interop-upstream   opt-in, not part of `make test`: the real iii engine and upstream's
#                           skills worker from ../shared/peers (PEERS=…); "not run" without them

# The publisher suite needs every driver: the Python one lives in the virtualenv.
conformance-publishers: venv node-build
