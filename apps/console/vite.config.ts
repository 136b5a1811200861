import { defineConfig } from "vite";
import { compression } from "vite-plugin-compression2";

/**
 * Built into dist/ by `pnpm install` and `pnpm start` (the generate step); the
 * gateway serves dist/ at /console. JSX compiles to Preact's runtime through
 * tsconfig.json (jsxImportSource), so no framework plugin is needed.
 * Scripts and stylesheets get gzip and brotli copies beside them, which the
 * gateway sends to a browser that accepts them: nothing compressed per request.
 */
export default defineConfig({
  base: "/console/",
  plugins: [compression({ algorithms: ["gzip", "brotliCompress"], include: /\.(js|css)$/ })],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The polyfill would be the only script not from a file; modern browsers need none.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
