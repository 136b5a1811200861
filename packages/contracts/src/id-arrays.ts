/**
 * The id arrays an assistant carries and a run inherits (semantics.md §5):
 * references to things Loom does not manage yet, checked for shape only.
 */
export type IdArray = "knowledgeBaseIds" | "retrieverIds" | "rulesetIds" | "structureIds" | "toolIds";
