import type { Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import type { EnvVarRecord, ToolServerRecord } from "./store/port.ts";
import type { SecretStore } from "./store/secrets.ts";

/** A secret a tool names, and the public path of the field that names it. */
interface SecretRef {
  path: string;
  id: string;
}

/** The secrets named by env vars (`source: secret_ref`, their `value`) and headers (`secret_ref`). */
function secretRefsOf(envVars: EnvVarRecord[] | undefined, server: ToolServerRecord | undefined): SecretRef[] {
  const refs: SecretRef[] = [];
  envVars?.forEach(({ source, value }, i) => {
    if (source === "secret_ref") refs.push({ path: `body.env_vars[${i}].value`, id: value });
  });
  for (const [name, header] of Object.entries(server?.headers ?? {}))
    if ("secretRef" in header) refs.push({ path: `body.server.headers.${name}.secret_ref`, id: header.secretRef });
  return refs;
}

/**
 * Each secret a tool names must be one of its organization's when the tool is
 * written (docs/behaviour.md §10). One deleted later stays named: the
 * tool's calls then fail, saying which. A header's malformed id is the
 * shape checks' to report (field-checks.ts); it is not looked up.
 */
export async function checkSecretRefs(
  violations: Violation[],
  store: SecretStore,
  organizationId: string,
  envVars: EnvVarRecord[] | undefined,
  server: ToolServerRecord | undefined,
): Promise<void> {
  const refs = secretRefsOf(envVars, server).filter(({ path, id }) => {
    if (isUuid(id)) return true;
    if (path.startsWith("body.env_vars")) violations.push({ path, message: "must be the id of a secret" });
    return false;
  });
  if (refs.length === 0) return;
  const found = new Set(
    (await store.getSecrets(organizationId, [...new Set(refs.map((r) => r.id.toLowerCase()))])).map((s) => s.id),
  );
  for (const { path, id } of refs)
    if (!found.has(id.toLowerCase())) violations.push({ path, message: `names no secret of the organization: ${id}` });
}
