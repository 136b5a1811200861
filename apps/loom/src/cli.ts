import { parseArgs } from "node:util";
import { failStartup } from "@loom/runtime/shutdown";
import { createLogger, logFormatOf } from "@loom/telemetry/logger";
import { keysCreate } from "./keys-create.ts";

/** `pnpm loom …`: commands an operator runs on the host, beside the API. */
const usage = `Usage: pnpm loom keys create [--organization ID] [--name NAME]

  keys create   Creates an organization API key and prints it once (on stdout).
                Reads LOOM_DATA_DIR (default ./.loom), or MONGODB_URL and
                MONGODB_DB_PREFIX, as Loom does. A data directory must be
                stopped; with MONGODB_URL, Loom may run.
    --organization ID   the organization (default: the first one, the bootstrap's)
    --name NAME         the key's name (default: "operator")
`;

// Logs (migrations, a bootstrap) and errors go to stderr: stdout carries the key alone.
const logger = createLogger("loom", process.env.LOG_LEVEL ?? "info", {
  format: logFormatOf(process.env, process.stderr.isTTY),
  destination: process.stderr,
});
try {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      organization: { type: "string" },
      name: { type: "string", default: "operator" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
  } else if (positionals.join(" ") === "keys create") {
    await keysCreate({ organization: values.organization, name: values.name }, logger);
  } else {
    process.stderr.write(usage);
    process.exitCode = 2;
  }
} catch (error) {
  failStartup(logger, error);
}
