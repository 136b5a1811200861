/**
 * The keys that appear more than once in one object of a JSON text, as
 * `path.key` ("service", "err.type"). JSON.parse keeps the last of them
 * silently, so it cannot tell; log collectors with duplicate detection
 * reject such a document. Expects valid JSON (an invalid text throws).
 */
export function duplicateKeys(json: string): string[] {
  const duplicates: string[] = [];
  /** One entry per open container: its keys so far (none for an array), and where it sits. */
  const open: Array<{ keys?: Set<string>; path: string; key?: string }> = [];
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const char = json[i];
    if (char === '"') {
      let end = i + 1;
      while (end < json.length && json[end] !== '"') end += json[end] === "\\" ? 2 : 1;
      const text = JSON.parse(json.slice(i, end + 1)) as string;
      const top = open.at(-1);
      if (expectKey && top?.keys) {
        if (top.keys.has(text)) duplicates.push(top.path + text);
        top.keys.add(text);
        top.key = text;
        expectKey = false;
      }
      i = end;
    } else if (char === "{" || char === "[") {
      const parent = open.at(-1);
      const path = parent ? `${parent.path}${parent.keys ? `${parent.key}.` : ""}` : "";
      open.push(char === "{" ? { keys: new Set(), path } : { path });
      expectKey = char === "{";
    } else if (char === "}" || char === "]") {
      open.pop();
    } else if (char === ",") {
      expectKey = open.at(-1)?.keys !== undefined;
    }
  }
  return duplicates;
}
