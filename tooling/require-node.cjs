// The first thing `pnpm install` and `pnpm start` run: on a Node.js older than
// Loom needs, one line saying so and a non-zero exit, instead of a stack trace
// from code this Node cannot run. Plain old JavaScript on purpose (var, no
// arrow functions, no template strings): it must parse on any Node.js.
var needed = 24;
var running = process.versions.node;
if (Number(running.split(".")[0]) < needed) {
  process.stderr.write("Loom needs Node.js " + needed + " or newer; this is Node.js " + running + " (" + process.execPath + "). See https://nodejs.org/\n");
  process.exit(1);
}
