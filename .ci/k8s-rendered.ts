import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

/** A Kubernetes resource as rendered by `kustomize build`, read loosely: the checks look up fields that may be absent. */
export type Resource = Record<string, any>;

/** The resources of a rendered overlay (one YAML stream); a YAML error stops the check. */
export function readRendered(file: string): Resource[] {
  return parseAllDocuments(readFileSync(file, "utf8")).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value = doc.toJS();
    return value && typeof value === "object" ? [value as Resource] : [];
  });
}
