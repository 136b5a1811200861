/**
 * Most bytes (UTF-8) of a secret's value (docs/api.md §8): a token, a key, a
 * certificate chain. The tools service checks it in bytes; the gateway's
 * schema says it in characters, which a value never has more of than bytes.
 */
export const maxSecretValueBytes = 65_536;
