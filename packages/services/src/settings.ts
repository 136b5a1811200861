import { env, mongoSettings, serviceSettings } from "@loom/runtime/config";
import { entryOf, type ServiceName, type services } from "./registry.ts";

/** What a service run on its own reads whatever it does: where it listens (its port by default) and its database. */
export function standaloneSettings(name: ServiceName) {
  const { port, database } = entryOf(name);
  return { ...serviceSettings(port), ...mongoSettings(database) };
}

/** The URL variables of `names`, as a config schema's shape: each a required URL. */
export type ServiceUrlSettings<N extends ServiceName> = {
  [K in N as (typeof services)[K]["urlVariable"]]: ReturnType<typeof env.url>;
};

/** The settings that say where the services `names` are (`IDENTITY_URL`, ...): for the processes that call them. */
export function serviceUrlSettings<N extends ServiceName>(names: readonly N[]): ServiceUrlSettings<N> {
  return Object.fromEntries(names.map((name) => [entryOf(name).urlVariable, env.url()])) as ServiceUrlSettings<N>;
}

/** Each of `names` at the URL its variable holds in `config`. */
export function serviceUrls<N extends ServiceName>(
  names: readonly N[],
  config: Record<string, unknown>,
): Record<N, string> {
  return Object.fromEntries(names.map((name) => [name, config[entryOf(name).urlVariable] as string])) as Record<
    N,
    string
  >;
}
