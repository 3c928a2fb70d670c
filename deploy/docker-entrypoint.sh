#!/bin/sh
# Entrypoint of the skills image (deploy/Dockerfile): the embedded iii engine
# and the registry in one process, both listeners on every interface of the
# container, state in /data. Arguments are appended to the server's flags
# (`docker run … skills --public-url https://skills.example.com`).
#
# Both tokens are required. The listeners bind 0.0.0.0 so that a published
# port reaches them, which also opens them to every other container on the
# same network: without III_ENGINE_TOKEN anyone there could register
# functions (the registry's own ids among them) and read and write state;
# without SKILLS_MCP_TOKEN anyone could use /mcp, /rpc (which runs code) and
# the web page. Checked by `make test-deploy` (server/internal/deploytest).
set -eu
missing=""
[ -n "${III_ENGINE_TOKEN:-}" ] || missing="$missing III_ENGINE_TOKEN"
[ -n "${SKILLS_MCP_TOKEN:-}" ] || missing="$missing SKILLS_MCP_TOKEN"
if [ -n "$missing" ]; then
	echo "skills image: set$missing (docker run -e III_ENGINE_TOKEN=\$(openssl rand -hex 32) -e SKILLS_MCP_TOKEN=\$(openssl rand -hex 32) …):" \
		"the engine socket and the HTTP endpoints listen on every interface of the container, and without a token anyone who reaches them" \
		"could register functions, read and write state and run code" >&2
	exit 2
fi
exec skills --standalone --config /data/config.yaml --data /data/engine \
	--url ws://0.0.0.0:49134 --mcp-addr 0.0.0.0:49135 "$@"
