import type { Page } from "@loom/contracts/paging";

/** A `data_lake` connector: a bucket of the organization and, in it, asset names and folders (`docs/`). */
export interface DataConnectorRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  bucketId: string;
  /** Empty: the whole bucket. */
  assetPaths: string[];
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type DataConnectorPatch = Partial<Pick<DataConnectorRecord, "name" | "description" | "bucketId" | "assetPaths">>;

/**
 * The data connectors part of the knowledge store: every read and write
 * scoped to one organization, like knowledge bases.
 */
export interface DataConnectorStore {
  insertDataConnector(connector: DataConnectorRecord): Promise<void>;
  getDataConnector(organizationId: string, id: string): Promise<DataConnectorRecord | undefined>;
  updateDataConnector(
    organizationId: string,
    id: string,
    patch: DataConnectorPatch,
    at: Date,
  ): Promise<DataConnectorRecord | undefined>;
  /**
   * Deletes a connector, then takes its id out of every knowledge base of the
   * organization that names it (their `updatedAt` becomes `at`).
   */
  deleteDataConnector(organizationId: string, id: string, at: Date): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  listDataConnectors(organizationId: string, skip: number, limit: number): Promise<Page<DataConnectorRecord>>;
  /** Which of `ids` are connectors of the organization. */
  existingDataConnectorIds(organizationId: string, ids: readonly string[]): Promise<Set<string>>;
}
