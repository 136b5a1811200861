import rangeParser from "range-parser";
import type { BlobInfo, ByteRange } from "./blobs/port.ts";

/**
 * The one range a download sends (RFC 9110 §14), parsed by `range-parser`
 * (jshttp's, behind Express's static files): undefined for the whole blob —
 * no Range, a malformed one, several ranges (answered whole, which the RFC
 * allows), or an If-Range naming other bytes — or "unsatisfiable" (416).
 */
export function parseRange(
  header: string | undefined,
  size: number,
  ifRange: string | string[] | undefined,
  blob: Pick<BlobInfo, "etag">,
): ByteRange | "unsatisfiable" | undefined {
  if (!header) return undefined;
  if (ifRange !== undefined && ifRange !== blob.etag) return undefined;
  const ranges = rangeParser(size, header, { combine: true });
  if (ranges === -1) return "unsatisfiable";
  if (ranges === -2 || ranges.type !== "bytes" || ranges.length !== 1) return undefined;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}
