import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { crc32, deflateSync } from "node:zlib";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** The protocol revision this server speaks: what a client calling it directly sends as `mcp-protocol-version`. */
export { LATEST_PROTOCOL_VERSION as mcpProtocolVersion } from "@modelcontextprotocol/sdk/types.js";

/** One `tools/call` as the server's handler received it. */
export interface ReceivedCall {
  tool: string;
  arguments: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/** One HTTP request as it arrived: its method, path and headers (to check what a client sends, and what it never does). */
export interface ReceivedHttpRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The client's port: requests with the same one came on one kept-alive connection. */
  clientPort: number | undefined;
}

/** One POST as `observe` sees it: the JSON-RPC message, when it arrived and when its answer was sent. */
export interface McpExchange {
  message: any;
  arrivedAt: number;
  answeredAt: number;
}

export interface McpTestServerOptions {
  /**
   * "streamable" (the current transport, stateless: a new server and transport per request) or "legacy" (the older
   * HTTP+SSE transport: GET opens the event stream, POST to the URL is 405, as a server without the new transport
   * answers).
   */
  transport?: "streamable" | "legacy";
  /** Streamable HTTP only: answer each POST with one JSON body instead of an SSE stream. */
  jsonResponse?: boolean;
  /** The server's path. */
  path?: string;
  /** The port to listen on (a server taking another's place, a benchmark's process); 0 by default. */
  port?: number;
  /**
   * Streamable HTTP only: told of every POST once its answer is sent, with the JSON-RPC message and the times
   * (`performance.now()`) it arrived and its answer was sent, for a benchmark's clock.
   */
  observe?: (exchange: McpExchange) => void;
  /** Keep every call and request in `calls` and `requests` (true unless told): a benchmark's long run would grow them without end. */
  record?: boolean;
}

/** The `json` tool's structured answer. */
export const mcpJsonResult = { items: [{ id: 1, name: "one" }], total: 1 };

/** The `image` tool's PNG: 3 × 2 pixels. */
export const mcpImage = { width: 3, height: 2, png: png(3, 2) };

/**
 * A real MCP server (the official TypeScript SDK) on port 0, for tests of Loom's MCP client. Its tools:
 * `add` (numbers a, b → their sum as text), `json` (structuredContent and its JSON as text), `image` (a small PNG),
 * `fail` (an isError result), `hang` (answers only when aborted; `hangAborted` resolves when it saw the abort),
 * `several` (a text and an image), `say-hello` (a name griptape cannot take: name → a greeting) and `huge` (a text
 * of `bytes` characters). `calls` and `requests` hold what it received.
 */
export async function startMcpServer(options: McpTestServerOptions = {}) {
  const path = options.path ?? "/mcp";
  const recording = options.record ?? true;
  const calls: ReceivedCall[] = [];
  const requests: ReceivedHttpRequest[] = [];
  const hangs = { started: 0, aborted: 0 };
  let onHangStarted: (() => void)[] = [];
  let onHangAborted: (() => void)[] = [];
  const legacySessions = new Map<string, SSEServerTransport>();

  const build = (headers: IncomingHttpHeaders) => {
    const server = new McpServer({ name: "loom-test-tools", version: "1.0.0" });
    const record = (tool: string, args: Record<string, unknown>) => {
      if (recording) calls.push({ tool, arguments: args, headers });
    };
    server.registerTool(
      "add",
      {
        description: "Adds two numbers: {{ a }} plus {{ b }}.",
        inputSchema: { a: z.number().describe("The first number"), b: z.number().describe("The second number") },
      },
      async ({ a, b }) => {
        record("add", { a, b });
        return { content: [{ type: "text", text: String(a + b) }] };
      },
    );
    server.registerTool(
      "json",
      {
        description: "Returns a JSON object.",
        inputSchema: { q: z.string().optional() },
        outputSchema: {
          items: z.array(z.object({ id: z.number(), name: z.string() })),
          total: z.number(),
        },
      },
      async (args) => {
        record("json", args);
        return { content: [{ type: "text", text: JSON.stringify(mcpJsonResult) }], structuredContent: mcpJsonResult };
      },
    );
    // Without an inputSchema the handler's one argument is `extra` (the SDK's arity rule).
    server.registerTool("image", { description: "Returns a small PNG image." }, async () => {
      record("image", {});
      return { content: [{ type: "image", data: mcpImage.png.toString("base64"), mimeType: "image/png" }] };
    });
    server.registerTool("fail", { description: "Always fails." }, async () => {
      record("fail", {});
      return { isError: true, content: [{ type: "text", text: "boom: the tool failed" }] };
    });
    server.registerTool("hang", { description: "Never answers until aborted." }, async (extra) => {
      record("hang", {});
      hangs.started++;
      for (const notify of onHangStarted.splice(0)) notify();
      return new Promise((_, reject) =>
        extra.signal.addEventListener("abort", () => {
          hangs.aborted++;
          for (const notify of onHangAborted.splice(0)) notify();
          reject(new Error("aborted"));
        }),
      );
    });
    server.registerTool("several", { description: "Returns a text and an image." }, async () => {
      record("several", {});
      return {
        content: [
          { type: "text", text: "a text" },
          { type: "image", data: mcpImage.png.toString("base64"), mimeType: "image/png" },
        ],
      };
    });
    // A name griptape cannot take as an activity name: Loom offers it as `say_hello`.
    server.registerTool(
      "say-hello",
      { description: "Greets someone.", inputSchema: { name: z.string() } },
      async ({ name }) => {
        record("say-hello", { name });
        return { content: [{ type: "text", text: `Hello, ${name}!` }] };
      },
    );
    server.registerTool(
      "huge",
      { description: "Returns a text of the given size.", inputSchema: { bytes: z.number().int().min(0) } },
      async ({ bytes }) => {
        record("huge", { bytes });
        return { content: [{ type: "text", text: "x".repeat(bytes) }] };
      },
    );
    return server;
  };

  const streamable = async (req: IncomingMessage, res: ServerResponse, arrivedAt: number) => {
    // A stateless server holds a GET stream open that never carries anything: say there is none.
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    // One server and transport per request: a stateless transport cannot be reused.
    const server = build(req.headers);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: options.jsonResponse ?? false,
    });
    // Closing when the client goes away is what aborts a hung handler's signal.
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    const observe = options.observe;
    if (!observe) return transport.handleRequest(req, res);
    // Read here to see the message; the transport takes it parsed.
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const message = JSON.parse(raw) as unknown;
    res.once("finish", () => observe({ message, arrivedAt, answeredAt: performance.now() }));
    await transport.handleRequest(req, res, message);
  };

  const legacy = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    if (url.pathname === path && req.method === "GET") {
      const transport = new SSEServerTransport(`${path}/messages`, res);
      legacySessions.set(transport.sessionId, transport);
      res.on("close", () => legacySessions.delete(transport.sessionId));
      await build(req.headers).connect(transport);
      return;
    }
    const session = legacySessions.get(url.searchParams.get("sessionId") ?? "");
    if (url.pathname === `${path}/messages` && req.method === "POST" && session) {
      await session.handlePostMessage(req, res);
      return;
    }
    res.writeHead(url.pathname === path ? 405 : 404).end();
  };

  const http = createServer((req, res) => {
    const arrivedAt = performance.now();
    const url = new URL(req.url ?? "/", "http://localhost");
    if (recording)
      requests.push({
        method: req.method ?? "",
        path: url.pathname + url.search,
        headers: req.headers,
        clientPort: req.socket.remotePort,
      });
    const handle = options.transport === "legacy" ? legacy(req, res, url) : streamable(req, res, arrivedAt);
    handle.catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    calls,
    requests,
    /** How many `hang` calls started, and how many of them the server saw aborted. */
    hangs,
    /** Resolves when the next `hang` call starts. */
    hangStarted: () => new Promise<void>((resolve) => onHangStarted.push(resolve)),
    /** Resolves when the server sees the next abort of a `hang` call. */
    hangAborted: () => new Promise<void>((resolve) => onHangAborted.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        onHangStarted = [];
        onHangAborted = [];
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

export type McpTestServer = Awaited<ReturnType<typeof startMcpServer>>;

/** A valid PNG of the given size (grey pixels), built rather than stored so its header is known. */
function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale, no interlace
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let y = 0; y < height; y++) rows[y * (width + 1)] = 0; // each row's filter byte: none
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
