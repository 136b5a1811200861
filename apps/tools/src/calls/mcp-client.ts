import { createHash } from "node:crypto";
import { createMCPClient, type InitializeResult, type MCPClient, MCPClientError } from "@ai-sdk/mcp";
import { LRUCache } from "lru-cache";
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

/** The revision whose servers `@ai-sdk/mcp` discovers (`server/discover`) instead of initializing. */
const discoveredRevision = "2026-07-28";

/**
 * What a stateless streamable HTTP server answered to `initialize`, by its URL: a later call starts from it instead
 * of the handshake (discovery probe, initialize, initialized: three or four requests). Only what the server says of
 * itself, never a header; a server that gives sessions is not kept (a session is not shared between calls).
 */
const handshakes = new LRUCache<string, InitializeResult>({ max: 1000, ttl: 10 * 60_000 });

interface Connection {
  client: MCPClient;
  /** Connected from a kept handshake: a failure of its first request means the server changed. */
  fromKept: boolean;
}

/**
 * The activities a server listed for these credentials (its URL and a digest of the headers sent, never the headers),
 * for a minute: a call of a listed activity then sends only its `tools/call`. A listing (ListActivities, which the
 * agent loop asks for before its calls) always asks the server and renews it; a name it does not hold is looked up
 * again before it is called unknown.
 */
const listings = new LRUCache<string, ServerActivity[]>({ max: 1000, ttl: 60_000 });

const listingKey = (target: ServerTarget) =>
  createHash("sha256")
    .update(JSON.stringify([target.url, Object.entries(target.headers).sort(([a], [b]) => (a < b ? -1 : 1))]))
    .digest("hex");

/**
 * A client of an MCP server through `@ai-sdk/mcp` (docs/decisions.md, "Calling tool servers"): streamable HTTP
 * first, the older HTTP+SSE transport when the server answers the first POST with 400, 404 or 405. One connection per
 * call, closed after it: the call's bounds hold for every request, and a hung call's abort reaches the server.
 */
export function mcpClient(target: ServerTarget, scope: CallScope): ToolServerClient {
  const key = listingKey(target);
  const listFresh = async (client: MCPClient) => {
    const activities = await listActivities(client, scope);
    listings.set(key, activities);
    return activities;
  };
  /**
   * Connects and uses the connection. A connection from a kept handshake whose request the server refuses with an
   * HTTP 4xx (nothing was done: a restart, another transport) shakes hands again and uses the new one.
   */
  const withClient = async <T>(use: (client: MCPClient) => Promise<T>): Promise<T> => {
    let connection = await connect(target, scope);
    try {
      try {
        return await use(connection.client);
      } catch (error) {
        if (!connection.fromKept || scope.signal.aborted || !refusedBeforeDoing(error)) throw error;
        handshakes.delete(target.url);
        await connection.client.close().catch(() => {});
        connection = await connect(target, scope);
        return await use(connection.client);
      }
    } catch (error) {
      throw serverFailure(error);
    } finally {
      await connection.client.close().catch(() => {});
    }
  };
  return {
    listActivities: () => withClient(listFresh),
    invoke: (name, input) =>
      withClient(async (client) => {
        const named = (activities: ServerActivity[] | undefined) => activities?.find((a) => a.name === name);
        const activity = named(listings.get(key)) ?? named(await listFresh(client));
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

/** An HTTP 4xx answer to a request: the server refused it before doing anything, so it may be sent again. */
const refusedBeforeDoing = (error: unknown) =>
  error instanceof MCPClientError &&
  error.statusCode !== undefined &&
  error.statusCode >= 400 &&
  error.statusCode < 500;

async function connect(target: ServerTarget, scope: CallScope): Promise<Connection> {
  let session = false;
  const kept = handshakes.get(target.url);
  const open = (type: "http" | "sse", initialInitializeResult?: InitializeResult) =>
    createMCPClient({
      transport: {
        type,
        url: target.url,
        headers: target.headers,
        fetch: (input, init) => scope.fetch(urlOf(input), init),
        ...(type === "http" ? { onSessionIdChange: (id?: string) => void (session ||= id !== undefined) } : {}),
      },
      initializationOptions: { signal: scope.signal },
      ...(initialInitializeResult ? { initialInitializeResult } : {}),
      clientName: "loom",
      // Transport noise (the 2026 revision's discovery probe refused by an older server, a GET stream the server
      // does not offer) is not the call's failure; what ends a call is the call's own request or its scope.
      onUncaughtError: () => {},
    });
  if (kept) return { client: await open("http", kept), fromKept: true };
  let client: MCPClient;
  try {
    client = await open("http");
  } catch (error) {
    if (
      !(error instanceof MCPClientError) ||
      !olderTransportStatuses.has(error.statusCode ?? 0) ||
      scope.signal.aborted
    )
      throw serverFailure(error);
    try {
      return { client: await open("sse"), fromKept: false };
    } catch (older) {
      throw serverFailure(older);
    }
  }
  const { initializeResult } = client;
  if (!session && initializeResult.protocolVersion !== discoveredRevision) handshakes.set(target.url, initializeResult);
  return { client, fromKept: false };
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
