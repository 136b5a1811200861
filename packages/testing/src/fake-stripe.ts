import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the fake Stripe received it; form bodies flattened (`line_items[0][price]`). */
export interface StripeRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  params: Record<string, string>;
}

/**
 * The few Stripe endpoints billing uses, with the state stripe-mock lacks
 * (stripe-mock ignores `lookup_keys` and retrieves any id): prices found by
 * lookup key, and customers created once per idempotency key, the way
 * Stripe replays an idempotent request. Customer creation takes
 * `createDelayMs`, so concurrent first calls overlap.
 */
export async function startFakeStripe(options: {
  prices: Record<string, { id: string; recurring: boolean }>;
  createDelayMs?: number;
}) {
  const requests: StripeRequest[] = [];
  const customersByKey = new Map<string, Promise<string>>();
  let customersCreated = 0;
  let sessions = 0;

  const server = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const url = new URL(req.url ?? "/", "http://fake");
    const params = Object.fromEntries(new URLSearchParams(req.method === "GET" ? url.search : raw));
    const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
    requests.push({ method: req.method ?? "", path: url.pathname, idempotencyKey, params });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };

    if (req.method === "GET" && url.pathname === "/v1/prices") {
      const keys = Object.entries(params)
        .filter(([name]) => name.startsWith("lookup_keys"))
        .map(([, value]) => value);
      const data = keys.flatMap((key) => {
        const price = options.prices[key];
        return price
          ? [
              {
                object: "price",
                id: price.id,
                lookup_key: key,
                active: true,
                type: price.recurring ? "recurring" : "one_time",
              },
            ]
          : [];
      });
      return send(200, { object: "list", url: "/v1/prices", has_more: false, data });
    }
    if (req.method === "POST" && url.pathname === "/v1/customers") {
      const key = idempotencyKey ?? `none-${customersCreated}`;
      let created = customersByKey.get(key);
      if (!created) {
        created = new Promise((resolve) =>
          setTimeout(() => resolve(`cus_fake${++customersCreated}`), options.createDelayMs ?? 0),
        );
        customersByKey.set(key, created);
      }
      return send(200, { object: "customer", id: await created, metadata: {} });
    }
    if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") {
      const id = `cs_fake${++sessions}`;
      return send(200, { object: "checkout.session", id, url: `https://checkout.stripe.test/c/pay/${id}` });
    }
    if (req.method === "POST" && url.pathname === "/v1/billing_portal/sessions") {
      const id = `bps_fake${++sessions}`;
      return send(200, { object: "billing_portal.session", id, url: `https://billing.stripe.test/p/session/${id}` });
    }
    send(404, {
      error: { type: "invalid_request_error", message: `the fake Stripe has no ${req.method} ${url.pathname}` },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    customersCreated: () => customersCreated,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type FakeStripe = Awaited<ReturnType<typeof startFakeStripe>>;
