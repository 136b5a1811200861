import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client, ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { checkText, nameProblem } from "@loom/contracts/text";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import type { StringList } from "@loom/proto/common/v1/common_pb";
import type { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import type { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { headersFor, type Principal, requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import { checkIds, checkKnown } from "./field-checks.ts";
import { createRulesetsHandlers } from "./rulesets-service.ts";
import type { AssistantPatch, AssistantRecord, AssistantsStore } from "./store/port.ts";

const present = (list: StringList | undefined) => list?.values;

export function createAssistantsService(deps: {
  store: AssistantsStore;
  /** The knowledge service, asked whether an assistant's knowledge bases are its organization's. */
  knowledgeBases: Client<typeof KnowledgeBasesService>;
  /** The tools service, which knows the organization's tools (ResolveTools). */
  tools: Client<typeof ToolsService>;
  now?: () => Date;
}): RpcService {
  const { store, knowledgeBases, tools } = deps;
  const now = deps.now ?? (() => new Date());

  /** An assistant's rulesets exist in its organization (docs/behaviour.md §5). */
  async function checkRulesets(violations: Violation[], organizationId: string, ids: string[] | undefined) {
    if (!ids?.length) return;
    const found = await store.getRulesets(organizationId, ids);
    checkKnown(violations, "body.ruleset_ids", ids, new Set(found.map((r) => r.id)), "ruleset");
  }
  /** The tools service is asked as the caller: another organization's tool is as unknown as a deleted one. */
  async function checkTools(violations: Violation[], principal: Principal, ids: string[] | undefined) {
    const wellFormed = ids?.filter(isUuid) ?? [];
    if (wellFormed.length === 0) return;
    const { missingIds } = await tools.resolveTools({ toolIds: wellFormed }, { headers: headersFor(principal) });
    const missing = new Set(missingIds);
    checkKnown(violations, "body.tool_ids", ids!, new Set(wellFormed.filter((id) => !missing.has(id))), "tool");
  }

  /**
   * An assistant's knowledge bases exist in its organization, as its rulesets
   * do: the knowledge service says which (as the caller). Other families' ids
   * are checked for shape only.
   */
  async function checkKnowledgeBases(violations: Violation[], principal: Principal, ids: string[] | undefined) {
    if (!ids?.length) return;
    const { missingIds } = await knowledgeBases.resolveKnowledgeBases(
      { knowledgeBaseIds: ids },
      { headers: headersFor(principal) },
    );
    const missing = new Set(missingIds);
    checkKnown(
      violations,
      "body.knowledge_base_ids",
      ids,
      new Set(ids.filter((id) => !missing.has(id))),
      "knowledge base",
    );
  }

  const impl: ServiceImpl<typeof AssistantsService> = {
    async createAssistant(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      const ids = {
        knowledgeBaseIds: checkIds(violations, "body.knowledge_base_ids", req.knowledgeBaseIds) ?? [],
        retrieverIds: checkIds(violations, "body.retriever_ids", req.retrieverIds) ?? [],
        rulesetIds: checkIds(violations, "body.ruleset_ids", req.rulesetIds) ?? [],
        structureIds: checkIds(violations, "body.structure_ids", req.structureIds) ?? [],
        toolIds: checkIds(violations, "body.tool_ids", req.toolIds) ?? [],
      };
      await checkRulesets(violations, principal.organizationId, ids.rulesetIds);
      await checkKnowledgeBases(violations, principal, ids.knowledgeBaseIds);
      await checkTools(violations, principal, ids.toolIds);
      if (violations.length > 0) throw invalidArgument(violations);
      const at = now();
      const assistant: AssistantRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        description: req.description ?? "",
        input: req.input,
        ...ids,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insert(assistant);
      return { assistant: assistantMessage(assistant) };
    },

    async getAssistant(req, ctx) {
      const found = await store.get(requirePrincipal(ctx).organizationId, req.assistantId);
      if (!found) throw notFound("assistant");
      return { assistant: assistantMessage(found) };
    },

    async updateAssistant(req, ctx) {
      const principal = requirePrincipal(ctx);
      const { organizationId } = principal;
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      const patch: AssistantPatch = {
        name: req.name,
        description: req.description,
        input: req.input,
        knowledgeBaseIds: checkIds(violations, "body.knowledge_base_ids", present(req.knowledgeBaseIds)),
        rulesetIds: checkIds(violations, "body.ruleset_ids", present(req.rulesetIds)),
        structureIds: checkIds(violations, "body.structure_ids", present(req.structureIds)),
        toolIds: checkIds(violations, "body.tool_ids", present(req.toolIds)),
      };
      await checkRulesets(violations, organizationId, patch.rulesetIds);
      await checkKnowledgeBases(violations, principal, patch.knowledgeBaseIds);
      await checkTools(violations, principal, patch.toolIds);
      if (violations.length > 0) throw invalidArgument(violations);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as AssistantPatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.get(organizationId, req.assistantId)
          : await store.update(organizationId, req.assistantId, given, now());
      if (!updated) throw notFound("assistant");
      return { assistant: assistantMessage(updated) };
    },

    async deleteAssistant(req, ctx) {
      if (!(await store.delete(requirePrincipal(ctx).organizationId, req.assistantId))) throw notFound("assistant");
      return {};
    },

    async listAssistants(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.list(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { assistants: items.map(assistantMessage), page: pageInfo(window, totalCount) };
    },
  };

  // Rulesets are the assistants service's too: they live beside the assistants that name them.
  const rulesets = createRulesetsHandlers({ store, now });
  return storeBackedService(
    "assistants",
    (router) => {
      router.service(AssistantsService, impl);
      router.service(RulesetsService, rulesets);
    },
    store,
  );
}

function assistantMessage(a: AssistantRecord) {
  return {
    assistantId: a.id,
    organizationId: a.organizationId,
    name: a.name,
    description: a.description,
    input: a.input,
    knowledgeBaseIds: a.knowledgeBaseIds,
    retrieverIds: a.retrieverIds,
    rulesetIds: a.rulesetIds,
    structureIds: a.structureIds,
    toolIds: a.toolIds,
    createdBy: a.createdBy,
    createdAt: timestampFromDate(a.createdAt),
    updatedAt: timestampFromDate(a.updatedAt),
  };
}
