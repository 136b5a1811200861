import type { Client } from "@connectrpc/connect";
import { notFound } from "@loom/contracts/errors";
import type { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { headersFor, type Principal } from "@loom/server/principal";

/** The assistant, read as the caller (the assistants service checks its organization); NOT_FOUND when it has none. */
export async function assistantOf(
  assistants: Client<typeof AssistantsService>,
  principal: Principal,
  assistantId: string,
) {
  const { assistant } = await assistants.getAssistant({ assistantId }, { headers: headersFor(principal) });
  if (!assistant) throw notFound("assistant");
  return assistant;
}
