import { createReadStream, createWriteStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";

/**
 * The local-disk baseline of the storage bench: a bare node:http server that
 * pipes a PUT's body to a file and a file to a GET's response, with none of
 * Loom in the way. It flushes an upload to disk (fdatasync) before answering,
 * as Loom's disk store does: the same durability, so the ratio compares the
 * same work.
 */
const dir = process.env.BLOB_DIR!;
createServer(async (req, res) => {
  if (req.url === "/healthz") return void res.end("ok");
  const path = join(dir, "blob");
  try {
    if (req.method === "PUT") {
      await pipeline(req, createWriteStream(path));
      const file = await open(path, "r");
      await file.datasync();
      await file.close();
      res.writeHead(200).end();
      return;
    }
    const { size } = await stat(path);
    res.writeHead(200, { "content-length": size, "content-type": "application/octet-stream" });
    await pipeline(createReadStream(path), res);
  } catch {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
}).listen(Number(process.env.PORT), "127.0.0.1");
process.once("SIGTERM", () => process.exit(0));
