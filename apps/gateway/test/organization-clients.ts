import type { TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { signAccessToken } from "@loom/testing/tokens";

/**
 * What most HTTP tests start from: the stack's bootstrap admin (its user and
 * organization) and `stranger`, a user of another organization, who must
 * see none of the admin's records.
 */
export async function organizationClients(
  stack: TestStack,
  stranger: string,
): Promise<{ admin: ApiClient; adminUserId: string; orgId: string; stranger: ApiClient }> {
  const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  const me = (await admin.get("/users")).body.users[0];
  return {
    admin,
    adminUserId: me.user_id,
    orgId: me.organizations[0],
    stranger: apiClient(stack.gatewayUrl, await signAccessToken({ sub: stranger })),
  };
}
