import type { SecretValues } from "../secret-values.ts";
import type { HeaderValue } from "../store/port.ts";

/** A header names a secret the organization does not have: the message names the header and the secret's id. */
export class MissingSecret extends Error {
  override name = "MissingSecret";
}

/**
 * The headers to send to a tool's server: plain values as they are, `secret_ref` ones read through SecretValues (which
 * marks them used). The values go to the server and nowhere else: not in a log line, a tool run or an error.
 */
export async function serverHeaders(
  headers: Record<string, HeaderValue>,
  secrets: SecretValues,
  organizationId: string,
  at: Date,
): Promise<{ headers: Record<string, string>; secretValues: string[] }> {
  const entries = Object.entries(headers);
  const ids = [...new Set(entries.flatMap(([, header]) => ("secretRef" in header ? [header.secretRef] : [])))];
  const values = ids.length > 0 ? await secrets.reveal(organizationId, ids, at) : new Map<string, string>();
  const resolved: Record<string, string> = {};
  for (const [name, header] of entries) {
    if ("value" in header) {
      resolved[name] = header.value;
      continue;
    }
    const value = values.get(header.secretRef);
    if (value === undefined)
      throw new MissingSecret(`the tool's header ${name} names the secret ${header.secretRef}, which does not exist`);
    resolved[name] = value;
  }
  return { headers: resolved, secretValues: [...values.values()] };
}

/**
 * Text with every secret value replaced by `[secret]`: what a server answers may echo a header it was sent (an
 * "invalid token …" error), and a failure's text goes into a tool run, its logs and an answer.
 */
export function redacted(text: string, secretValues: readonly string[]): string {
  return secretValues.reduce((result, value) => (value === "" ? result : result.replaceAll(value, "[secret]")), text);
}
