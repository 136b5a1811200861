// pnpm loads this file before any command (install, start, test): on a Node.js too old
// for Loom it prints one line and exits non-zero, before anything is downloaded.
require("./tooling/require-node.cjs");
