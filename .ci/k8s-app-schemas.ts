import { assistantsConfigSchema } from "../apps/assistants/src/config.ts";
import { eventsConfigSchema } from "../apps/events/src/config.ts";
import { gatewayConfigSchema } from "../apps/gateway/src/config.ts";
import { identityConfigSchema } from "../apps/identity/src/config.ts";
import { runsConfigSchema } from "../apps/runs/src/config.ts";
import { storageConfigSchema } from "../apps/storage/src/config.ts";
import type { loadConfig } from "@loom/runtime/config";

/** Every Loom app the image runs (APP), with the configuration schema its main.ts reads at start. */
export const appConfigSchemas: Record<string, Parameters<typeof loadConfig>[0]> = {
  gateway: gatewayConfigSchema,
  identity: identityConfigSchema,
  assistants: assistantsConfigSchema,
  runs: runsConfigSchema,
  events: eventsConfigSchema,
  storage: storageConfigSchema,
};
