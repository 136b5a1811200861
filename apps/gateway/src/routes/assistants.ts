import type { Assistant } from "@loom/proto/assistants/v1/assistants_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { assistantListSchema, assistantSchema } from "../schemas.ts";
import { boundedName, boundedText, idArray, pageQuery, uuid } from "../validation.ts";

const ids = (description: string) => idArray.optional().meta({ description });

const createBody = z.object({
  name: boundedName(200).meta({ description: "The assistant's name" }),
  description: boundedText(200).optional().meta({ description: "What the assistant is for, in words" }),
  input: z.string().optional().meta({
    description:
      "The user message of a run given no `input`, as a template: `{{ args[N] }}` is the run's N-th arg, `{{ args }}` all of them",
  }),
  knowledge_base_ids: ids("The knowledge bases its runs search"),
  retriever_ids: ids("Retrievers: accepted and echoed; Loom has no retrievers yet"),
  ruleset_ids: ids("The rulesets whose rules its runs follow, in this order"),
  structure_ids: ids("Structures: accepted and echoed; Loom has no structures yet"),
  tool_ids: ids("The tools its runs may call"),
});

// docs/api.md §4: the update body has no retriever_ids; sent anyway, it is ignored like any unknown field.
const updateBody = createBody.omit({ retriever_ids: true }).partial();

const list = (values: string[] | undefined) => (values === undefined ? undefined : { values });

export function assistantJson(a: Assistant | undefined) {
  if (!a) throw new Error("the assistants service answered without an assistant");
  return {
    assistant_id: a.assistantId,
    organization_id: a.organizationId,
    name: a.name,
    description: a.description,
    ...(a.input !== undefined ? { input: a.input } : {}),
    knowledge_base_ids: a.knowledgeBaseIds,
    retriever_ids: a.retrieverIds,
    ruleset_ids: a.rulesetIds,
    structure_ids: a.structureIds,
    tool_ids: a.toolIds,
    created_at: isoTime(a.createdAt),
    created_by: a.createdBy,
    updated_at: isoTime(a.updatedAt),
  };
}

export function assistantOperations({ assistants }: ServiceClients) {
  const assistantPath = z.object({ assistant_id: uuid });
  return [
    defineOperation({
      id: "ListAssistants",
      method: "GET",
      path: "/assistants",
      summary: "The organization's assistants, newest first",
      query: pageQuery,
      response: { status: 200, description: "A page of assistants", schema: assistantListSchema },
      async handle({ query, call }) {
        const res = await assistants.listAssistants({ page: { page: query.page, pageSize: query.page_size } }, call);
        return { assistants: res.assistants.map(assistantJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateAssistant",
      method: "POST",
      path: "/assistants",
      summary: "Creates an assistant",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new assistant", schema: assistantSchema },
      handle: async ({ body, call }) =>
        assistantJson(
          (
            await assistants.createAssistant(
              {
                name: body.name,
                description: body.description,
                input: body.input,
                knowledgeBaseIds: body.knowledge_base_ids,
                retrieverIds: body.retriever_ids,
                rulesetIds: body.ruleset_ids,
                structureIds: body.structure_ids,
                toolIds: body.tool_ids,
              },
              call,
            )
          ).assistant,
        ),
    }),
    defineOperation({
      id: "GetAssistant",
      method: "GET",
      path: "/assistants/{assistant_id}",
      summary: "One assistant",
      params: assistantPath,
      response: { status: 200, description: "The assistant", schema: assistantSchema },
      handle: async ({ params, call }) =>
        assistantJson((await assistants.getAssistant({ assistantId: params.assistant_id }, call)).assistant),
    }),
    defineOperation({
      id: "UpdateAssistant",
      method: "PATCH",
      path: "/assistants/{assistant_id}",
      summary: "Changes the given fields of an assistant (not retriever_ids)",
      params: assistantPath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The assistant as it is now", schema: assistantSchema },
      handle: async ({ params, body, call }) =>
        assistantJson(
          (
            await assistants.updateAssistant(
              {
                assistantId: params.assistant_id,
                name: body?.name,
                description: body?.description,
                input: body?.input,
                knowledgeBaseIds: list(body?.knowledge_base_ids),
                rulesetIds: list(body?.ruleset_ids),
                structureIds: list(body?.structure_ids),
                toolIds: list(body?.tool_ids),
              },
              call,
            )
          ).assistant,
        ),
    }),
    defineOperation({
      id: "DeleteAssistant",
      method: "DELETE",
      path: "/assistants/{assistant_id}",
      summary: "Deletes an assistant; its runs stay readable",
      params: assistantPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) =>
        void (await assistants.deleteAssistant({ assistantId: params.assistant_id }, call)),
    }),
  ];
}
