import { type Pagination, pageQuery, request } from "../api/request.ts";

export interface KnowledgeBase {
  knowledge_base_id: string;
  name: string;
  description: string;
  config: { gtc_pg_vector: { embedding_model: string | null } };
  asset_paths: string[];
  created_at: string;
}

export type KnowledgeBasePage = { knowledge_bases: KnowledgeBase[]; pagination: Pagination };

export const listKnowledgeBases = (key: string, page: number, pageSize: number) =>
  request<KnowledgeBasePage>(key, "GET", `/knowledge-bases?${pageQuery(page, pageSize)}`);
