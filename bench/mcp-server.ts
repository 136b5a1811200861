import { startMcpServer } from "@loom/testing/mcp-server";

/** The tests' MCP server (stateless streamable HTTP) as a process of its own, on the port given, for bench/tool-invoke.ts. */
const server = await startMcpServer({ port: Number(process.argv[2]) });
process.once("SIGTERM", () => void server.close().then(() => process.exit(0)));
