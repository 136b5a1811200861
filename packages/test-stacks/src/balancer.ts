import { connect, createServer, type Server, type Socket } from "node:net";

export interface Balancer {
  close(): Promise<void>;
}

/**
 * A TCP balancer on `port` in front of a service's replicas, as a
 * Kubernetes Service is in production: each new connection goes to the next
 * replica in turn, skipping one that refuses it (stopped), so callers reach
 * whichever replicas are up. Plain `node:net` piping: a test stand-in for the
 * platform's load balancing, not Loom's business, and too small for a library.
 */
export async function startBalancer(port: number, replicaPorts: () => readonly number[]): Promise<Balancer> {
  let next = 0;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const forward = (client: Socket, tried: number) => {
    const ports = replicaPorts();
    if (tried >= ports.length) return client.destroy(); // none is up: the caller sees a reset, as with no endpoint
    const target = ports[next++ % ports.length]!;
    const upstream = connect(target, "127.0.0.1");
    track(upstream);
    let connected = false;
    upstream.once("error", () => {
      if (!connected) forward(client, tried + 1);
      else client.destroy();
    });
    upstream.once("connect", () => {
      connected = true;
      client.pipe(upstream).pipe(client);
      client.once("error", () => upstream.destroy());
      client.once("close", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
    });
  };
  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    forward(client, 0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
