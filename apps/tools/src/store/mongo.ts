import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db, Filter } from "mongodb";
import type { HeaderValue, ToolPatch, ToolRecord, ToolRunRecord, ToolServerRecord, ToolsStore } from "./port.ts";
import { createMongoSecretStore } from "./secrets-mongo.ts";

/**
 * A server as stored: its headers as a list of entries, since a header name
 * may hold `.` or `$`, which MongoDB does not take in a field name.
 */
type StoredServer = Omit<ToolServerRecord, "headers"> & { headers: ({ name: string } & HeaderValue)[] };
type StoredTool = Omit<Doc<ToolRecord>, "server"> & { server?: StoredServer };

const storedServer = (server: ToolServerRecord | undefined): StoredServer | undefined =>
  server && { ...server, headers: Object.entries(server.headers).map(([name, value]) => ({ name, ...value })) };

const serverOf = (stored: StoredServer): ToolServerRecord => ({
  ...stored,
  headers: Object.fromEntries(stored.headers.map(({ name, ...value }) => [name, value as HeaderValue])),
});

function toolOf(doc: StoredTool | null): ToolRecord | undefined {
  if (!doc) return undefined;
  const { server, ...rest } = doc;
  const tool = fromDoc<ToolRecord>(rest as Doc<ToolRecord>)!;
  return server ? { ...tool, server: serverOf(server) } : tool;
}

const storedPatch = ({ server, ...rest }: ToolPatch) => ({
  ...rest,
  ...(server ? { server: storedServer(server) } : {}),
});

/** A run as stored: absent optional fields are absent, never null, so a read gives the record back as written. */
const runOf = (doc: Doc<ToolRunRecord> | null) => fromDoc<ToolRunRecord>(doc);

/** MongoDB adapter: a collection of tools, one of tool runs (and the secrets part's), scoped by organizationId in every query. */
export function createMongoToolsStore(db: Db, ping: () => Promise<boolean>, close: () => Promise<void>): ToolsStore {
  const tools: Collection<StoredTool> = db.collection("tools");
  const secretStore = createMongoSecretStore(db);
  const runs: Collection<Doc<ToolRunRecord>> = db.collection("tool_runs");
  return {
    ...secretStore,
    async init() {
      await tools.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await secretStore.init();
      await runs.createIndex({ organizationId: 1, toolId: 1, createdAt: -1, _id: -1 });
      // The sweep of runs a stopped process left RUNNING (endRunsStartedBefore): only the few in progress are read.
      await runs.createIndex({ status: 1, startedAt: 1 });
    },
    ready: ping,
    close,
    async insert({ server, ...tool }) {
      await tools.insertOne({ ...toDoc(tool), server: storedServer(server) });
    },
    get: async (organizationId, id) => toolOf(await tools.findOne({ _id: id, organizationId })),
    getMany: async (organizationId, ids) =>
      (await tools.find({ _id: { $in: [...ids] }, organizationId }).toArray()).map((d) => toolOf(d)!),
    getForCall: async (organizationId, id) => toolOf(await tools.findOne({ _id: id, organizationId })),
    durable: async () => {},
    update: async (organizationId, id, patch, at) =>
      toolOf(
        await tools.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...storedPatch(patch), updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    delete: async (organizationId, id) => (await tools.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    async list(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        tools.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        tools.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => toolOf(d)!), totalCount };
    },

    async insertRun(run) {
      await runs.insertOne(toDoc(run));
    },
    async endRun(organizationId, id, { status, output, statusDetail, logs, at }) {
      const set = { status, completedAt: at, updatedAt: at, ...(output === undefined ? {} : { output }) };
      return runOf(
        await runs.findOneAndUpdate(
          { _id: id, organizationId, completedAt: { $exists: false } },
          {
            $set: statusDetail === undefined ? set : { ...set, statusDetail },
            $push: { logs: { $each: logs } },
          },
          { returnDocument: "after" },
        ),
      );
    },
    getRun: async (organizationId, id) => runOf(await runs.findOne({ _id: id, organizationId })),
    async endRunsStartedBefore(startedBefore, { status, output, statusDetail, logs, at }, limit) {
      const stale = { status: "RUNNING" as const, startedAt: { $lt: startedBefore } };
      const ids = (
        await runs
          .find(stale, { projection: { _id: 1 } })
          .sort({ startedAt: 1 })
          .limit(limit)
          .toArray()
      ).map((d) => d._id);
      if (ids.length === 0) return 0;
      const set = { status, completedAt: at, updatedAt: at, ...(output === undefined ? {} : { output }) };
      // The filter is checked again as each run is written (atomic on MongoDB, as endRun's): a run ended meanwhile,
      // by another replica's sweep, is left as it is. FerretDB does not isolate concurrent updates of one document
      // (docs/decisions.md, Runs): there two sweeps at once may both end a run, with the same end.
      const result = await runs.updateMany(
        { _id: { $in: ids }, ...stale },
        { $set: statusDetail === undefined ? set : { ...set, statusDetail }, $push: { logs: { $each: logs } } },
      );
      return result.modifiedCount;
    },
    async listRuns(organizationId, toolId, statuses, skip, limit) {
      const query: Filter<Doc<ToolRunRecord>> = {
        organizationId,
        toolId,
        ...(statuses.length ? { status: { $in: [...statuses] } } : {}),
      };
      const [docs, totalCount] = await Promise.all([
        runs.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        runs.countDocuments(query),
      ]);
      return { items: docs.map((d) => runOf(d)!), totalCount };
    },
  };
}
