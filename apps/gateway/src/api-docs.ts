import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Context, Next } from "koa";

/**
 * The API reference page, `/docs`: Swagger UI (the swagger-ui-dist package)
 * rendering `/openapi.json`, every asset served from the package's files by
 * Loom itself — nothing from a CDN, so it works offline (docs/decisions.md,
 * "HTTP surface"). Every URL on the page is relative, so it also works under
 * the /api alias and behind a proxy that adds a path prefix.
 */
const swaggerUiDir = (createRequire(import.meta.url)("swagger-ui-dist/absolute-path.js") as () => string)();

/** The page; no inline script or style, so the Content-Security-Policy below can forbid them. */
const page = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Loom API reference</title>
    <link rel="stylesheet" href="docs/swagger-ui.css">
    <link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/init.js"></script>
  </body>
</html>
`;

/** Swagger UI sets style attributes and draws icons from data: URLs; everything else comes from this origin. */
const contentSecurityPolicy =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";

interface Asset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

const packageFiles: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

const compress = promisify(gzip);

/** Compressed off the event loop (the bundle takes tens of milliseconds). */
async function asset(type: string, body: Buffer): Promise<Asset> {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { type, body, gzipped: await compress(body), etag };
}

/**
 * `/docs` is the page, `/docs/<file>` its assets (`/` goes to the console: console.ts).
 * Public, like /openapi.json. Read and compressed once, on first use; each
 * answer carries an ETag, so a browser revalidates (`no-cache`) and gets a
 * 304 instead of 1.7 MB of script until Loom (or its swagger-ui-dist) changes.
 */
export function apiDocs() {
  const assets = new Map<string, Promise<Asset>>();
  const load = (name: string): Promise<Asset> | undefined => {
    let loaded = assets.get(name);
    if (!loaded) {
      if (name === "") loaded = asset("text/html; charset=utf-8", Buffer.from(page));
      else if (name === "init.js")
        loaded = readFile(new URL("api-docs-init.js", import.meta.url)).then((body) =>
          asset("text/javascript; charset=utf-8", body),
        );
      else if (Object.hasOwn(packageFiles, name))
        loaded = readFile(join(swaggerUiDir, name)).then((body) => asset(packageFiles[name]!, body));
      else return undefined;
      assets.set(name, loaded);
    }
    return loaded;
  };

  return async (ctx: Context, next: Next): Promise<void> => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    // Relative, like the page's own URLs: right under /api and behind a prefix too.
    if (ctx.path === "/docs/") return ctx.redirect("../docs");
    if (ctx.path !== "/docs" && !ctx.path.startsWith("/docs/")) return next();
    const found = load(ctx.path === "/docs" ? "" : ctx.path.slice("/docs/".length));
    if (!found) return next();
    const { type, body, gzipped, etag } = await found;
    ctx.set("Cache-Control", "no-cache");
    ctx.set("Vary", "Accept-Encoding");
    ctx.set("X-Content-Type-Options", "nosniff");
    if (ctx.path === "/docs") ctx.set("Content-Security-Policy", contentSecurityPolicy);
    ctx.etag = etag;
    ctx.status = 200;
    if (ctx.fresh) return void (ctx.status = 304);
    ctx.type = type;
    if (ctx.acceptsEncodings("gzip", "identity") === "gzip") {
      ctx.set("Content-Encoding", "gzip");
      ctx.body = gzipped;
    } else ctx.body = body;
  };
}
