import { createMCPClient, type MCPClient, MCPClientError } from "@ai-sdk/mcp";
import type { CallScope } from "./call-scope.ts";
import { artifactOfMcpResult } from "./mcp-results.ts";
import {
  activityName,
  brief,
  byName,
  type ServerActivity,
  type ServerTarget,
  type ToolServerClient,
  ToolServerFailed,
  UnknownActivity,
} from "./tool-server.ts";

/** `tools/list` pages read at most: a server that never stops paging is not listed forever. */
const maxPages = 50;

/** Statuses a server without the streamable HTTP transport answers its POST with: try the older HTTP+SSE one. */
const olderTransportStatuses = new Set([400, 404, 405]);

/**
 * A client of an MCP server through `@ai-sdk/mcp` (docs/decisions.md, "Calling tool servers"): streamable HTTP
 * first, the older HTTP+SSE transport when the server answers the first POST with 400, 404 or 405. One connection per
 * call, closed after it: the call's bounds hold for every request, and a hung call's abort reaches the server.
 */
export function mcpClient(target: ServerTarget, scope: CallScope): ToolServerClient {
  const withClient = async <T>(use: (client: MCPClient) => Promise<T>): Promise<T> => {
    const client = await connect(target, scope);
    try {
      return await use(client);
    } catch (error) {
      throw serverFailure(error);
    } finally {
      await client.close().catch(() => {});
    }
  };
  return {
    listActivities: () => withClient((client) => listActivities(client, scope)),
    invoke: (name, input) =>
      withClient(async (client) => {
        const activity = (await listActivities(client, scope)).find((a) => a.name === name);
        if (!activity) throw new UnknownActivity(name);
        const result = await client.callTool({
          name: activity.serverName,
          arguments: input,
          options: { signal: scope.signal },
        });
        return artifactOfMcpResult(result);
      }),
  };
}

async function connect(target: ServerTarget, scope: CallScope): Promise<MCPClient> {
  const open = (type: "http" | "sse") =>
    createMCPClient({
      transport: {
        type,
        url: target.url,
        headers: target.headers,
        fetch: (input, init) => scope.fetch(urlOf(input), init),
      },
      initializationOptions: { signal: scope.signal },
      clientName: "loom",
      // Transport noise (the 2026 revision's discovery probe refused by an older server, a GET stream the server
      // does not offer) is not the call's failure; what ends a call is the call's own request or its scope.
      onUncaughtError: () => {},
    });
  try {
    return await open("http");
  } catch (error) {
    if (error instanceof MCPClientError && olderTransportStatuses.has(error.statusCode ?? 0) && !scope.signal.aborted)
      try {
        return await open("sse");
      } catch (older) {
        throw serverFailure(older);
      }
    throw serverFailure(error);
  }
}

async function listActivities(client: MCPClient, scope: CallScope): Promise<ServerActivity[]> {
  const activities: ServerActivity[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const listed = await client.listTools({
      ...(cursor ? { params: { cursor } } : {}),
      options: { signal: scope.signal },
    });
    for (const tool of listed.tools)
      activities.push({
        name: activityName(tool.name),
        serverName: tool.name,
        description: tool.description ?? "",
        inputSchema: tool.inputSchema as Record<string, unknown>,
      });
    cursor = listed.nextCursor;
    if (!cursor) break;
  }
  return byName(activities);
}

/** What the server answered, as `ToolServerFailed`; any other error (no connection, an abort) as it is. */
function serverFailure(error: unknown): unknown {
  if (!(error instanceof MCPClientError) || error instanceof ToolServerFailed) return error;
  if (error.statusCode !== undefined)
    return new ToolServerFailed(`the MCP server answered HTTP ${error.statusCode}${bodyOf(error.responseBody)}`);
  if (error.code !== undefined)
    return new ToolServerFailed(`the MCP server answered error ${error.code}: ${brief(error.message)}`);
  return error;
}

/** The client passes URLs; a Request would carry its own method and body, which this fetch does not read. */
const urlOf = (input: string | URL | Request) => (input instanceof Request ? input.url : input);

const bodyOf = (body: string | undefined) => (body ? `: ${brief(body)}` : "");
