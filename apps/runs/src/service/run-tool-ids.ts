import type { Client } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import type { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type IdSource, unknownId } from "./id-sources.ts";

/**
 * The tool ids a run's request gives (`tool_ids`, `additional_tool_ids`)
 * name tools of the organization, asked of the tools service as the caller
 * (docs/decisions.md, "Runs that call tools"): an id that names none (unknown,
 * deleted, another organization's) is INVALID_ARGUMENT at the field it came
 * from, the first list holding it. The assistant's own list is not checked
 * again: a tool deleted since it was assigned is skipped when the run lists
 * its tools, with a SYSTEM event. No id given, no call.
 */
export async function checkRunToolIds(
  tools: Client<typeof ToolsService>,
  principal: Principal,
  sources: IdSource[],
): Promise<void> {
  const toolIds = [...new Set(sources.flatMap((s) => s.ids.map((id) => id.toLowerCase())).filter(isUuid))];
  if (toolIds.length === 0) return;
  const { missingIds } = await tools.resolveTools({ toolIds }, { headers: headersFor(principal) });
  if (missingIds.length > 0) throw invalidArgument(missingIds.map((id) => unknownId("tool", "tool_ids", id, sources)));
}
