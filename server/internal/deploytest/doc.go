// Package deploytest checks the deployment files in deploy/ against real
// tools: the systemd unit with `systemd-analyze verify` and the install
// recipe of docs/deploy.md run as written, with the unit started as an
// unprivileged uid as systemd would (systemd does not boot on the test
// machines); the Caddyfile and the nginx example by running Caddy and
// nginx on 127.0.0.1 with a throwaway certificate in front of a real
// `skills --standalone`, reached as https://skills.example.com (/mcp with
// its SSE stream, /rpc, the probes, the web page's sign-in and an action);
// the Dockerfile read for its rules, its entrypoint run with the real
// binary, and its build context computed with Docker's .dockerignore
// matcher (no Docker daemon runs the tests).
//
// `make test-deploy` installs nginx, caddy and systemd's tools from Debian
// when they are missing and sets DEPLOY_TESTS_REQUIRED=1 when they are
// installed, so a tool missing then fails; where they could not be
// installed (no apt-get or sudo) and under plain `go test` a missing tool
// skips its test with a "not run" line.
package deploytest
