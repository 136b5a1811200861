// The first thing `pnpm install` and `pnpm start` run: on a Node.js older than
// Loom needs, one line saying so and a non-zero exit, instead of a stack trace
// from code this Node cannot run. Plain old JavaScript on purpose (var, no
// arrow functions, no template strings): it must parse on any Node.js.
var needed = 24;
var running = process.versions.node;
if (Number(running.split(".")[0]) < needed) {
  writeWhole(
    2,
    "Loom needs Node.js " +
      needed +
      " or newer; this is Node.js " +
      running +
      " (" +
      process.execPath +
      "). See https://nodejs.org/\n",
  );
  process.exit(1);
}

// The whole line, newline included, before process.exit: process.stderr.write
// on a pipe that is momentarily full (a slow reader: a CI log, a pager) only
// queues what does not fit, and exit drops the queue, so the line came out
// cut short or not at all. A synchronous write waits for room instead.
function writeWhole(fd, text) {
  // biome-ignore lint/style/useNodejsImportProtocol: this check must run, and print its line, on any Node.js however old.
  var fs = require("fs");
  var bytes = Buffer.from(text);
  var written = 0;
  while (written < bytes.length) {
    try {
      written += fs.writeSync(fd, bytes, written, bytes.length - written);
    } catch (error) {
      // A non-blocking descriptor (pnpm's own stderr) says EAGAIN while full: try again.
      if (error.code !== "EAGAIN") throw error;
    }
  }
}
