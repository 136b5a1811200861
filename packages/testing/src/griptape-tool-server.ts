import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the server received it. */
export interface ReceivedToolRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/**
 * The server's OpenAPI document, as a hosted griptape tool (FastAPI) serves it: OpenAPI 3.1, the input schemas in
 * `components`, an optional field as `anyOf [string, null]` and a 3.1 `type` list, which a griptape client cannot
 * read as they are.
 */
export const griptapeToolOpenApi = {
  openapi: "3.1.0",
  info: { title: "Text Tool", version: "0.1.0" },
  paths: {
    "/activities/reverse": {
      post: {
        operationId: "reverse",
        description: "Reverses a text.",
        requestBody: {
          content: { "application/json": { schema: { $ref: "#/components/schemas/ReverseInput" } } },
          required: true,
        },
      },
    },
    "/activities/fail": {
      post: { operationId: "fail", description: "Always fails with a server error." },
    },
    "/health": { get: { operationId: "health" } },
  },
  components: {
    schemas: {
      ReverseInput: {
        type: "object",
        properties: {
          text: { type: "string", description: "The text to reverse" },
          suffix: { anyOf: [{ type: "string" }, { type: "null" }], description: "Appended to the result" },
          times: { type: ["integer", "null"] },
        },
        required: ["text"],
      },
    },
  },
};

/**
 * A small griptape-style tool server on port 0: `GET /openapi` gives `griptapeToolOpenApi`, `POST /activities/<op>`
 * runs an activity and answers with a griptape artifact (`reverse` → TextArtifact; `fail` → 500, echoing the
 * `Authorization` header it was sent). `requests` holds
 * what it received.
 */
export async function startGriptapeToolServer(options: { path?: string } = {}) {
  const base = options.path ?? "";
  const requests: ReceivedToolRequest[] = [];
  const http = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const path = (req.url ?? "/").split("?")[0]!;
    const body = raw ? (JSON.parse(raw) as unknown) : undefined;
    requests.push({ method: req.method ?? "", path, headers: req.headers, body });
    const send = (status: number, value: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    if (req.method === "GET" && path === `${base}/openapi`) return send(200, griptapeToolOpenApi);
    if (req.method === "POST" && path === `${base}/activities/reverse`) {
      const { text, suffix } = (body ?? {}) as { text?: string; suffix?: string };
      const value = [...(text ?? "")].reverse().join("") + (suffix ?? "");
      return send(200, { type: "TextArtifact", id: "a1", reference: null, meta: {}, name: "a1", value });
    }
    // As a careless server's error does, it echoes the credential it was sent.
    if (req.method === "POST" && path === `${base}/activities/fail`)
      return send(500, { detail: "the activity broke", authorization: req.headers.authorization ?? null });
    send(404, { detail: "Not Found" });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${base}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

export type GriptapeToolServer = Awaited<ReturnType<typeof startGriptapeToolServer>>;
