// Package deploytest checks the deployment files in deploy/ against real
// tools: the systemd unit with `systemd-analyze verify`, the Caddyfile with
// `caddy adapt`, and the nginx example by running nginx on 127.0.0.1 with a
// throwaway certificate in front of a real `skills --standalone`, reached as
// https://skills.example.com (/mcp with its SSE stream, /rpc, the probes).
//
// `make test-deploy` installs nginx, caddy and systemd's tools from Debian
// when they are missing and sets DEPLOY_TESTS_REQUIRED=1, so a missing tool
// fails there; under plain `go test` a missing tool skips its test with a
// "not run" line.
package deploytest
