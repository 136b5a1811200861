import type { Client } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import type { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type IdSource, unknownId } from "./id-sources.ts";

/**
 * A run's knowledge bases exist in its organization when it is created, as
 * its rulesets must (docs/behaviour.md §5): the knowledge service says which,
 * read as the caller. An id that names none is INVALID_ARGUMENT naming the
 * field it came from (`sources` in order). No knowledge base, no call.
 */
export async function checkRunKnowledgeBases(
  knowledgeBases: Client<typeof KnowledgeBasesService>,
  principal: Principal,
  knowledgeBaseIds: string[],
  sources: IdSource[],
): Promise<void> {
  if (knowledgeBaseIds.length === 0) return;
  const { missingIds } = await knowledgeBases.resolveKnowledgeBases(
    { knowledgeBaseIds },
    { headers: headersFor(principal) },
  );
  if (missingIds.length > 0)
    throw invalidArgument(missingIds.map((id) => unknownId("knowledge base", "knowledge_base_ids", id, sources)));
}
