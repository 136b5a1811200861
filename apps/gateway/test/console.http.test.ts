import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayConfigSchema } from "../src/config.ts";
import { serveWithoutServices } from "./no-services.ts";

/** The app itself is checked in a real browser (apps/loom/test/console/); here: what HTTP clients see. */
describe("the console, /console", () => {
  let base: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ base, close } = await serveWithoutServices());
  });
  afterAll(() => close());

  const get = (path: string) => fetch(base + path, { redirect: "manual" });

  it("redirects / (and /api) to /console, without a credential", async () => {
    for (const path of ["/", "/api"]) {
      const res = await get(path);
      expect(res.status, path).toBe(302);
      expect(new URL(res.headers.get("location")!, base + path).pathname, path).toBe("/console");
    }
  });

  it("serves the page for /console and every screen's path under it, with a strict Content-Security-Policy", async () => {
    for (const path of ["/console", "/console/", "/console/assistants", "/console/assistants/some-id"]) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control"), path).toBe("no-cache");
      const policy = res.headers.get("content-security-policy") ?? "";
      for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'"])
        expect(policy, path).toContain(directive);
      expect(policy, path).not.toContain("unsafe");
      const html = await res.text();
      expect(html, path).toContain('<div id="app"></div>');
      // No inline script: every script is a file of this origin.
      expect(html, path).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html, path).not.toMatch(/https?:/);
    }
  });

  it("serves the page's script and stylesheet from its own files, cached for good (their names change with them)", async () => {
    const html = await (await get("/console")).text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.some((s) => s.endsWith(".js"))).toBe(true);
    expect(sources.some((s) => s.endsWith(".css"))).toBe(true);
    for (const source of sources) {
      expect(source).toMatch(/^\/console\/assets\//);
      const res = await get(source);
      expect(res.status, source).toBe(200);
      expect(res.headers.get("cache-control"), source).toContain("immutable");
      expect(res.headers.get("content-security-policy"), source).toContain("default-src 'self'");
      expect((await res.arrayBuffer()).byteLength, source).toBeGreaterThan(100);
    }
  });

  it("sends the build's compressed copy of the script to a browser that accepts it", async () => {
    const html = await (await get("/console")).text();
    const script = /src="([^"]+\.js)"/.exec(html)![1]!;
    const plain = await fetch(base + script, { headers: { "accept-encoding": "identity" } });
    const size = (await plain.arrayBuffer()).byteLength;
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toBe("Accept-Encoding");
    for (const [accepted, encoding] of [
      ["gzip", "gzip"],
      ["gzip, deflate, br", "br"],
    ] as const) {
      const res = await fetch(base + script, { headers: { "accept-encoding": accepted } });
      expect(res.headers.get("content-encoding"), accepted).toBe(encoding);
      expect(res.headers.get("content-type"), accepted).toBe("text/javascript; charset=utf-8");
      expect(Number(res.headers.get("content-length")), accepted).toBeLessThan(size / 2);
      expect((await res.arrayBuffer()).byteLength, accepted).toBe(size); // fetch decompresses: the same script
    }
  });

  it("answers a missing built file with 404 and never serves a file outside the build", async () => {
    expect((await get("/console/assets/nothing-here.js")).status).toBe(404);
    for (const path of ["/console/assets/../../package.json", "/console/assets/%2e%2e/%2e%2e/package.json"]) {
      const res = await get(path);
      expect(await res.text(), path).not.toContain("@loom/console");
    }
  });

  it("leaves the API alone: other paths still need a credential", async () => {
    expect((await get("/assistants")).status).toBe(401);
    expect((await get("/consoles")).status).toBe(401);
  });
});

describe("the console's policy with blobs on S3 (CONSOLE_CONNECT_ORIGINS)", () => {
  it("reads the setting as origins, and refuses a value that is not a URL", () => {
    const parse = (value: string | undefined) => gatewayConfigSchema.shape.CONSOLE_CONNECT_ORIGINS.safeParse(value);
    expect(parse("http://127.0.0.1:9000/loom-blobs, https://s3.eu-west-1.amazonaws.com").data).toEqual([
      "http://127.0.0.1:9000",
      "https://s3.eu-west-1.amazonaws.com",
    ]);
    expect(parse(undefined).data).toEqual([]);
    expect(parse("s3 please").success).toBe(false);
  });

  it("lets the page's requests reach those origins too, and nothing else", async () => {
    const { base, close } = await serveWithoutServices({ consoleConnectOrigins: ["http://127.0.0.1:9000"] });
    try {
      const policy = (await fetch(`${base}/console`)).headers.get("content-security-policy") ?? "";
      expect(policy).toContain("connect-src 'self' http://127.0.0.1:9000;");
      expect(policy).toContain("script-src 'self';");
    } finally {
      await close();
    }
  });
});
