import type { Page } from "@loom/contracts/paging";

/** A chunk a query found, as the query keeps it: what its answer showed, so reading it again shows the same. */
export interface QueryEntryRecord {
  /** The chunk's id. */
  id: string;
  score: number;
  /** The chunk's embedding, when the query asked for vectors and the chunk had one. */
  vector?: number[];
  /** The chunk as a griptape TextArtifact, serialized as JSON (query/artifact.ts). */
  artifactJson: string;
}

/** A query of a knowledge base, kept with what it found. */
export interface KnowledgeBaseQueryRecord {
  id: string;
  organizationId: string;
  knowledgeBaseId: string;
  query: string;
  count: number;
  includeVectors: boolean;
  mode: "keyword" | "hybrid";
  entries: QueryEntryRecord[];
  createdBy: string;
  createdAt: Date;
}

/** A search of a knowledge base: the chunks found and the answer a model wrote from them, kept. */
export interface KnowledgeBaseSearchRecord {
  id: string;
  organizationId: string;
  knowledgeBaseId: string;
  query: string;
  result: string;
  /** `provider:model`, the model that wrote the result. */
  model: string;
  entries: QueryEntryRecord[];
  createdBy: string;
  createdAt: Date;
}

/** The kept queries and searches part of the knowledge store: every read scoped to one organization, like knowledge bases. */
export interface KnowledgeBaseQueryStore {
  insertQuery(query: KnowledgeBaseQueryRecord): Promise<void>;
  getQuery(organizationId: string, id: string): Promise<KnowledgeBaseQueryRecord | undefined>;
  /** A knowledge base's queries, newest first by created_at, ties by id. */
  listQueries(
    organizationId: string,
    knowledgeBaseId: string,
    skip: number,
    limit: number,
  ): Promise<Page<KnowledgeBaseQueryRecord>>;
  /** Deletes a knowledge base's kept queries and searches (it is being deleted); idempotent. */
  deleteQueriesOf(organizationId: string, knowledgeBaseId: string): Promise<void>;
  insertSearch(search: KnowledgeBaseSearchRecord): Promise<void>;
  getSearch(organizationId: string, id: string): Promise<KnowledgeBaseSearchRecord | undefined>;
  /** A knowledge base's searches, newest first by created_at, ties by id. */
  listSearches(
    organizationId: string,
    knowledgeBaseId: string,
    skip: number,
    limit: number,
  ): Promise<Page<KnowledgeBaseSearchRecord>>;
}
