import type { ServiceImpl } from "@connectrpc/connect";
import type { RunsService } from "@loom/proto/runs/v1/runs_pb";
import type { RunsStore } from "../store/port.ts";

/**
 * Every answer waits until the store's writes so far are on disk
 * (`RunsStore.durable`), failures too: a caller is told nothing a crash
 * could take back, while the worker's own steps never wait for the disk.
 */
export function answeredDurably(
  impl: ServiceImpl<typeof RunsService>,
  store: Pick<RunsStore, "durable">,
): ServiceImpl<typeof RunsService> {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(impl) as Array<
    [string, (req: unknown, ctx: unknown) => Promise<unknown>]
  >) {
    wrapped[name] = async (req: unknown, ctx: unknown) => {
      let answer: unknown;
      try {
        answer = await method(req, ctx);
      } catch (error) {
        await store.durable().catch(() => {});
        throw error;
      }
      await store.durable();
      return answer;
    };
  }
  return wrapped as ServiceImpl<typeof RunsService>;
}
