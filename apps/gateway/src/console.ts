import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { send } from "@koa/send";
import type { Context, Next } from "koa";

/**
 * The console, `/console`: the single-page app built from the @loom/console
 * package (its dist/, made by the install and start steps), served as files
 * by Loom itself from the API's origin, so it calls the API with no CORS and
 * nothing from outside the machine (docs/decisions.md, "The console").
 */
const distDir = join(dirname(createRequire(import.meta.url).resolve("@loom/console/package.json")), "dist");

/**
 * Scripts, styles and requests from this origin only (the built page has no
 * inline script or style), and requests also to `connectOrigins`: where signed
 * upload and download URLs point when blobs live in S3 with public URLs.
 */
const contentSecurityPolicy = (connectOrigins: readonly string[]) =>
  `default-src 'self'; script-src 'self'; style-src 'self'; connect-src ${["'self'", ...connectOrigins].join(" ")}; img-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'`;

/** A year: files under assets/ carry a hash of their content in their name, so a change is a new name. */
const assetMaxAgeMs = 365 * 24 * 3600 * 1000;

/**
 * `/` redirects to `/console`. `/console/assets/<file>` is a built file (404
 * if there is none); any other path under `/console` is one of the app's
 * screens, so the page (index.html), whose script reads the path. Public:
 * the page asks for an API key and every API call it makes carries it.
 */
export function consoleApp(connectOrigins: readonly string[] = []) {
  const policy = contentSecurityPolicy(connectOrigins);
  return async (ctx: Context, next: Next): Promise<void> => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    // Relative: right under /api and behind a proxy that adds a prefix too.
    if (ctx.path === "/") return ctx.redirect("console");
    if (ctx.path !== "/console" && !ctx.path.startsWith("/console/")) return next();
    ctx.set("Content-Security-Policy", policy);
    ctx.set("X-Content-Type-Options", "nosniff");
    const file = ctx.path.slice("/console".length);
    if (file.startsWith("/assets/")) {
      // Sent as the build's brotli or gzip copy when the browser accepts one.
      ctx.set("Vary", "Accept-Encoding");
      await send(ctx, file, { root: distDir, immutable: true, maxage: assetMaxAgeMs });
      return;
    }
    ctx.set("Cache-Control", "no-cache");
    await send(ctx, "index.html", { root: distDir });
  };
}
