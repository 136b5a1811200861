// ESLint runs only the rules that need the TypeScript type checker (Biome, biome.json, does formatting, import order
// and every other rule): a promise nobody awaits, a condition on a promise, an await on what is not one.
// Plain JavaScript: ESLint loads a TypeScript config only through an extra loader.
import tseslint from "typescript-eslint";

export default tseslint.config(
  // The fixtures hold the mistakes the lint test (tooling/lint) proves are caught.
  { ignores: ["**/node_modules/**", "packages/proto/src/gen/**", "tooling/lint/fixtures/**"] },
  {
    files: ["**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      // Each file is checked with the nearest tsconfig.json: its package's.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    plugins: { "@typescript-eslint": tseslint.plugin },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      // checksVoidReturn off: Node's and Koa's callbacks (createServer, app.callback()) take async handlers by design.
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      "@typescript-eslint/await-thenable": "error",
      // A promise returned from inside try without await escapes its catch and finally.
      "@typescript-eslint/return-await": ["error", "in-try-catch"],
      "@typescript-eslint/only-throw-error": "error",
    },
  },
);
