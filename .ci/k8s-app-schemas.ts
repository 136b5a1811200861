import type { loadConfig } from "@loom/runtime/config";
import type { ServiceProcess } from "@loom/server/run-service";
import { serviceNames } from "@loom/services/registry";
import { gatewayConfigSchema } from "../apps/gateway/src/config.ts";

type Schema = Parameters<typeof loadConfig>[0];

/** A service's schema, from the `process.ts` its main.ts runs (the service registry names them all). */
async function serviceSchema(name: string): Promise<Schema> {
  const { serviceProcess } = (await import(`../apps/${name}/src/process.ts`)) as { serviceProcess: ServiceProcess };
  return serviceProcess.schema;
}

/** Every Loom app the image runs on its own (APP), with the configuration schema its main.ts reads at start. */
export const appConfigSchemas: Record<string, Schema> = {
  gateway: gatewayConfigSchema,
  ...Object.fromEntries(await Promise.all(serviceNames.map(async (name) => [name, await serviceSchema(name)]))),
};
