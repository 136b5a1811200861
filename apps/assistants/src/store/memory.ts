import { inMemoryLifecycle } from "@loom/kit/in-memory-store";
import { plainCopy } from "@loom/kit/plain-copy";
import { newestFirst } from "@loom/kit/paging";
import type { AssistantRecord, AssistantsStore } from "./port.ts";

/** The embedded default and the fast test double. */
export function createMemoryAssistantsStore(): AssistantsStore {
  const assistants = new Map<string, AssistantRecord>();
  const copy = plainCopy;
  const owned = (organizationId: string, id: string) => {
    const found = assistants.get(id);
    return found?.organizationId === organizationId ? found : undefined;
  };
  return {
    ...inMemoryLifecycle,
    async insert(assistant) {
      assistants.set(assistant.id, copy(assistant));
    },
    get: async (organizationId, id) => copy(owned(organizationId, id)),
    async update(organizationId, id, patch, at) {
      const found = owned(organizationId, id);
      if (!found) return undefined;
      Object.assign(found, copy(patch), { updatedAt: at });
      return copy(found);
    },
    delete: async (organizationId, id) => owned(organizationId, id) !== undefined && assistants.delete(id),
    async list(organizationId, skip, limit) {
      const all = [...assistants.values()].filter((a) => a.organizationId === organizationId).sort(newestFirst);
      return { items: copy(all.slice(skip, skip + limit)), totalCount: all.length };
    },
  };
}
