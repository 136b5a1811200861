import { defineConfig } from "vite";

/**
 * Built into dist/ by `pnpm install` and `pnpm start` (the generate step); the
 * gateway serves dist/ at /console. JSX compiles to Preact's runtime through
 * tsconfig.json (jsxImportSource), so no framework plugin is needed.
 */
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The polyfill would be the only script not from a file; modern browsers need none.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
