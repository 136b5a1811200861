import { startMcpServer } from "@loom/testing/mcp-server";

/**
 * The repo's MCP test server (stateless streamable HTTP) in a process of its
 * own, on the port its argument names: what the activities bench calls, directly and through Loom,
 * without sharing the load generator's event loop. It keeps no record of its
 * calls (a long run would grow it without end).
 */
await startMcpServer({ port: Number(process.argv[2]), record: false });
process.once("SIGTERM", () => process.exit(0));
