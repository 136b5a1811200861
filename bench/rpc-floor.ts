import { Agent, createServer, request } from "node:http";
import { type ConnectRouter, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { connectRequestHandler } from "@loom/server/connect-request-handler";
import { serviceTransport } from "@loom/server/service-transport";
import Koa from "koa";

/**
 * Floors for the GetApiKey benchmark: what one hop costs on this machine,
 * with no Loom service code in it. FLOOR=upstream serves both an empty
 * Connect service and a plain HTTP echo; FLOOR=connect / FLOOR=http is Koa
 * making one call per request to it. HOP=loom makes the Connect hop with
 * Loom's own transport and handler (no interceptors); HOP=connect-node with
 * connect-node's client and adapter, the reference.
 */
const floor = process.env.FLOOR;
const port = Number(process.env.PORT);
const upstreamPort = Number(process.env.UPSTREAM_PORT);
const body = JSON.parse(process.env.BODY ?? "{}");

if (floor === "upstream") {
  const routes = (router: ConnectRouter) =>
    router.service(IdentityService, {
      getApiKey: async (req) => ({ apiKey: { apiKeyId: req.apiKeyId, name: "floor" } }),
    });
  const rpc =
    process.env.HOP === "loom" ? connectRequestHandler({ routes, interceptors: [] }) : connectNodeAdapter({ routes });
  createServer((req, res) => {
    if (req.url === "/healthz") return void res.end("ok");
    if (req.url === "/plain")
      return void req
        .resume()
        .on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body)));
    rpc(req, res);
  }).listen(port, "127.0.0.1");
} else {
  const baseUrl = `http://127.0.0.1:${upstreamPort}`;
  const connect = createClient(
    IdentityService,
    process.env.HOP === "loom"
      ? serviceTransport(baseUrl, [])
      : createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
  );
  const agent = new Agent({ keepAlive: true });
  const plainCall = () =>
    new Promise<string>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: upstreamPort, path: "/plain", method: "POST", agent }, (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => resolve(text));
      });
      req.on("error", reject).end("{}");
    });
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.path === "/healthz") return void (ctx.body = "ok");
    if (floor === "connect") {
      const { apiKey } = await connect.getApiKey({ apiKeyId: "floor" });
      ctx.body = { ...body, name: apiKey?.name };
    } else {
      ctx.body = JSON.parse(await plainCall());
    }
  });
  createServer(app.callback()).listen(port, "127.0.0.1");
}
process.once("SIGTERM", () => process.exit(0));
