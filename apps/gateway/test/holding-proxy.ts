import { createServer, request } from "node:http";
import { listen, type RunningServer } from "@loom/server/rpc-server";

/**
 * A plain HTTP proxy in front of a service that, while `hold()` is on, keeps
 * the answers to one procedure until `release()`: the service has answered,
 * the answer is on its way, and the caller does not have it yet — a slow
 * network, made with real bytes over real sockets.
 */
export async function startHoldingProxy(target: string, procedure: string) {
  let holding = false;
  let release = () => {};
  let gate = Promise.resolve();
  const answered: Array<() => void> = [];
  const server = createServer((req, res) => {
    const upstream = request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", async () => {
        if (holding && req.url!.endsWith(`/${procedure}`)) {
          answered.splice(0).forEach((resolve) => resolve());
          await gate;
        }
        res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(chunks));
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  const running: RunningServer = await listen(server, 0, "127.0.0.1");
  return {
    url: running.url,
    /** From now on, answers to the procedure wait for `release()`. */
    hold(): void {
      holding = true;
      gate = new Promise((resolve) => (release = resolve));
    },
    /** Resolves when the service has answered a held call (the answer now waits here). */
    answerHeld: () => new Promise<void>((resolve) => answered.push(resolve)),
    release(): void {
      holding = false;
      release();
    },
    close: () => running.close(),
  };
}
