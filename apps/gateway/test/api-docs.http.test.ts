import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveWithoutServices } from "./no-services.ts";

/** The page itself is checked in a real browser (apps/loom/test/docs-page.test.ts); here: what HTTP clients see. */
describe("the API reference page, /docs", () => {
  let base: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ base, close } = await serveWithoutServices());
  });
  afterAll(() => close());

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(base + path, { headers, redirect: "manual" });

  it("redirects /docs/ to /docs, without a credential", async () => {
    const slash = await get("/docs/");
    expect(new URL(slash.headers.get("location")!, `${base}/docs/`).pathname).toBe("/docs");
  });

  it("serves the page, its init script and Swagger UI's files from Loom itself, without a credential", async () => {
    const page = await get("/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources).toEqual([
      "docs/swagger-ui.css",
      "docs/favicon-32x32.png",
      "docs/swagger-ui-bundle.js",
      "docs/init.js",
    ]);
    expect(html).not.toMatch(/<script>|<style|http/);
    for (const source of sources) {
      const res = await get(`/${source}`);
      expect(res.status, source).toBe(200);
      expect((await res.arrayBuffer()).byteLength, source).toBeGreaterThan(100);
    }
    const init = await (await get("/docs/init.js")).text();
    expect(init).toContain('fetch("openapi.json")');
    expect(init).toContain("validatorUrl: null");
    expect(init).toContain("displayOperationId: true");
    expect(init).toContain('docExpansion: "list"'); // operations collapsed until opened
    expect((await get("/api/docs/swagger-ui-bundle.js")).status).toBe(200);
  });

  it("answers unknown files under /docs as any unknown path (401 without a credential), never the package's other files", async () => {
    for (const path of [
      "/docs/index.html",
      "/docs/swagger-initializer.js",
      "/docs/../package.json",
      "/docs/swagger-ui-bundle.js.map",
    ]) {
      expect((await get(path)).status, path).toBe(401);
    }
  });

  it("revalidates with an ETag (304) and compresses when asked", async () => {
    const first = await get("/docs/swagger-ui-bundle.js", { "accept-encoding": "identity" });
    expect(first.headers.get("cache-control")).toBe("no-cache");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const plain = Buffer.from(await first.arrayBuffer());
    // As a browser revalidates (fetch would add `Cache-Control: no-cache`, which asks for the body whatever the ETag).
    expect(
      (await get("/docs/swagger-ui-bundle.js", { "if-none-match": etag, "cache-control": "max-age=0" })).status,
    ).toBe(304);

    const zipped = await get("/docs/swagger-ui-bundle.js", { "accept-encoding": "gzip" });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.headers.get("vary")).toContain("Accept-Encoding");
    // fetch decodes gzip itself: the bytes are the same script.
    expect(Buffer.from(await zipped.arrayBuffer()).equals(plain)).toBe(true);
    expect(Number(zipped.headers.get("content-length"))).toBeLessThan(plain.length / 2);
  });
});
