import { AsyncLocalStorage } from "node:async_hooks";
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
  /** Connected from a kept handshake, or kept itself: a request refused with a 4xx means the server changed. */
  fromKept: boolean;
  /** A stateless streamable HTTP server's client: it may serve the next calls (`keptClients`). */
  keepable: boolean;
}

/**
 * The call whose request a client sends: its transport's fetch sends each request within that call's bounds
 * (`CallScope`: the policy, limits and cancel), so that one client can serve calls one after another and side by side.
 */
const currentCall = new AsyncLocalStorage<CallScope>();

/** A kept client and the calls using it: one dropped from `keptClients` closes once no call uses it. */
interface KeptClient {
  client: MCPClient;
  users: number;
  dropped: boolean;
}

const closeWhenUnused = (kept: KeptClient) => {
  if (kept.dropped && kept.users === 0) void kept.client.close().catch(() => {});
};

/**
 * Connected clients of stateless streamable HTTP servers, by organization, URL and a digest of the headers sent (at
 * most 100, each closed after 30 s unused): a call then sends only its `tools/call`, without building a client and
 * closing it (docs/decisions.md, "Calling tool servers"). A client holds no call's bounds (each request is sent in its
 * own call's, `currentCall`); a request it sends that fails other than with the server's own JSON-RPC error drops it.
 */
const keptClients = new LRUCache<string, KeptClient>({
  max: 100,
  ttl: 30_000,
  updateAgeOnGet: true,
  ttlAutopurge: true,
  // A call in flight keeps its client open: closing it would fail the call's request.
  dispose: (kept) => {
    kept.dropped = true;
    closeWhenUnused(kept);
  },
});

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
 * first, the older HTTP+SSE transport when the server answers the first POST with 400, 404 or 405. A stateless
 * streamable HTTP server's client is kept for the next calls of the organization with the same headers; any other is
 * closed after its call. Every request is sent within the call's bounds, and a hung call's abort reaches the server.
 */
export function mcpClient(target: ServerTarget, scope: CallScope, organizationId: string): ToolServerClient {
  const key = listingKey(target);
  const clientKey = `${organizationId} ${key}`;
  const listFresh = async (client: MCPClient) => {
    const activities = await listActivities(client, scope);
    listings.set(key, activities);
    return activities;
  };
  /**
   * Connects and uses the connection. A connection from a kept handshake whose request the server refuses with an
   * HTTP 4xx (nothing was done: a restart, another transport) shakes hands again and uses the new one.
   */
  const withClient = <T>(use: (client: MCPClient) => Promise<T>): Promise<T> =>
    currentCall.run(scope, async () => {
      const kept = keptClients.get(clientKey);
      if (kept) {
        kept.users++;
        try {
          return await use(kept.client);
        } catch (error) {
          // A cancelled or timed-out request ends only itself; anything else but the server's own error may be the client's.
          if (!serversOwnError(error) && !scope.signal.aborted) keptClients.delete(clientKey);
          if (scope.signal.aborted || !refusedBeforeDoing(error)) throw serverFailure(error);
          handshakes.delete(target.url);
        } finally {
          kept.users--;
          closeWhenUnused(kept);
        }
        return usedOnce(await connect(target, scope), use);
      }
      return usedOnce(await connect(target, scope), use);
    });
  /**
   * Uses a new connection: kept afterwards when its server is stateless and the call went well, else closed. One from
   * a kept handshake whose request the server refuses with an HTTP 4xx (nothing was done: a restart, another
   * transport) shakes hands again and uses the new one.
   */
  const usedOnce = async <T>(first: Connection, use: (client: MCPClient) => Promise<T>): Promise<T> => {
    let connection = first;
    let keep = false;
    try {
      try {
        const result = await use(connection.client);
        keep = connection.keepable;
        return result;
      } catch (error) {
        if (!connection.fromKept || scope.signal.aborted || !refusedBeforeDoing(error)) throw error;
        handshakes.delete(target.url);
        await connection.client.close().catch(() => {});
        connection = await connect(target, scope);
        const result = await use(connection.client);
        keep = connection.keepable;
        return result;
      }
    } catch (error) {
      throw serverFailure(error);
    } finally {
      // Another call's client kept meanwhile stays; this one is closed.
      if (keep && !keptClients.has(clientKey))
        keptClients.set(clientKey, { client: connection.client, users: 0, dropped: false });
      else await connection.client.close().catch(() => {});
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

/** The server's JSON-RPC error for one request: its connection, and the client, are as good as before. */
const serversOwnError = (error: unknown) =>
  error instanceof MCPClientError && error.code !== undefined && error.statusCode === undefined;

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
        fetch: (input, init) =>
          type === "http" && init?.method === "GET" ? noEventStream() : callOf(scope).fetch(urlOf(input), init),
        ...(type === "http" ? { onSessionIdChange: (id?: string) => void (session ||= id !== undefined) } : {}),
      },
      initializationOptions: { signal: scope.signal },
      ...(initialInitializeResult ? { initialInitializeResult } : {}),
      clientName: "loom",
      // Transport noise (the 2026 revision's discovery probe refused by an older server, a GET stream the server
      // does not offer) is not the call's failure; what ends a call is the call's own request or its scope.
      onUncaughtError: () => {},
    });
  if (kept) return { client: await open("http", kept), fromKept: true, keepable: !session };
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
      return { client: await open("sse"), fromKept: false, keepable: false };
    } catch (older) {
      throw serverFailure(older);
    }
  }
  const { initializeResult } = client;
  if (!session && initializeResult.protocolVersion !== discoveredRevision) handshakes.set(target.url, initializeResult);
  return { client, fromKept: false, keepable: !session };
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

/**
 * The streamable HTTP transport's GET, the optional stream of server messages unrelated to any request, answered as a
 * server that offers none answers it, without a request: a call's answers come on its POST's own response, and the
 * stream would close with the call (docs/decisions.md, "Calling tool servers").
 */
const noEventStream = async () => new Response(null, { status: 405 });

/**
 * The call a request belongs to: the one running (`currentCall`), or for a client used by one call only, that call.
 * A kept client sends nothing outside a call (no GET stream, no reconnection): `connecting` is the call that made it.
 */
const callOf = (connecting: CallScope) => currentCall.getStore() ?? connecting;

/** The client passes URLs; a Request would carry its own method and body, which this fetch does not read. */
const urlOf = (input: string | URL | Request) => (input instanceof Request ? input.url : input);

const bodyOf = (body: string | undefined) => (body ? `: ${brief(body)}` : "");
