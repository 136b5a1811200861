import { createServer } from "node:http";
import { createHttpServer } from "@loom/server/turn-batched-response";
import Koa from "koa";

/**
 * The baseline: a bare Koa handler answering with the same JSON a GetApiKey
 * answers, with none of Loom in the way. With TURN_BATCHED=1, on Loom's HTTP
 * server (responses leave in batches per event-loop turn): the reference that
 * shows what that server alone is worth.
 */
const body = JSON.parse(process.env.BODY ?? "{}");
const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path === "/healthz") return void (ctx.body = { status: "ok" });
  if (ctx.method === "POST") {
    // Reads and parses what it is sent, as a real handler must, then accepts it.
    let text = "";
    for await (const chunk of ctx.req) text += chunk;
    JSON.parse(text);
    ctx.status = 202;
    return;
  }
  ctx.body = body;
});
(process.env.TURN_BATCHED === "1" ? createHttpServer : createServer)(app.callback()).listen(
  Number(process.env.PORT),
  "127.0.0.1",
);
process.once("SIGTERM", () => process.exit(0));
