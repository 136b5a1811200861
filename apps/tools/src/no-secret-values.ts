import type { SecretValues } from "./secret-values.ts";

/**
 * SecretValues that knows no secret: every id is absent, so a tool whose header names a secret fails its calls,
 * saying which secret is missing. Stands in until the secrets store is wired (it implements SecretValues).
 */
export const noSecretValues: SecretValues = {
  reveal: async () => new Map(),
};
