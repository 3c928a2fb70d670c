"""agentskills-mcp-server (the MCP Skills extension's reference server)
over Streamable HTTP on 127.0.0.1:PORT, serving one folder skill:

    python reference_server.py ROOT SKILL_ID PORT

Its own command line (python -m agentskills_mcp_server) listens on a
fixed port; this builds the same server (create_mcp_server with the
filesystem provider) and chooses the port.
"""

import asyncio
import sys

from agentskills_core import Skill
from agentskills_fs import LocalFileSystemSkillProvider
from agentskills_mcp_server import create_mcp_server


def main() -> None:
    root, skill_id, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = asyncio.run(create_mcp_server([Skill(skill_id, LocalFileSystemSkillProvider(root))], name="reference"))
    server.run(transport="streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
