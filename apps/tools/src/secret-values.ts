/**
 * How a tool call gets the values of the secrets its headers and env vars
 * name (`secret_ref`). The secrets part of this service implements it; the
 * calling part sees nothing else of secrets, so a value leaves the store only
 * on its way to a tool server.
 */
export interface SecretValues {
  /**
   * The values of the organization's secrets with these ids, by id, and each
   * found secret's `last_used` set to `at`. An unknown id (or another
   * organization's) is absent from the answer.
   */
  reveal(organizationId: string, secretIds: readonly string[], at: Date): Promise<Map<string, string>>;
}
