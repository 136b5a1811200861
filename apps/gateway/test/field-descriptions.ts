/**
 * Every field of /openapi.json without a description (and how many fields there are), as `<tag> <where>`: a
 * path parameter `{name}`, a query parameter `?name`, a request body's field
 * `body.name`, an answer's `name` (`items[].name` inside arrays), a stream
 * event's `event.name`, the error body's `ErrorBody name`. One entry per tag
 * and place, so a field shared by a resource's operations is one entry.
 */
type Json = any;

const described = (schema: Json): boolean =>
  typeof schema?.description === "string" || (schema?.anyOf ?? []).some(described);

function walk(schema: Json, prefix: string, field: (name: string, isDescribed: boolean) => void): void {
  if (!schema || typeof schema !== "object") return;
  for (const member of schema.anyOf ?? []) walk(member, prefix, field);
  if (schema.items) walk(schema.items, `${prefix}[].`, field);
  if (typeof schema.additionalProperties === "object") walk(schema.additionalProperties, `${prefix}*.`, field);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    field(`${prefix}${name}`, described(property));
    walk(property, `${prefix}${name}.`, field);
  }
}

export function undescribedFields(document: Json): { missing: string[]; total: number } {
  const all = new Set<string>();
  const missing = new Set<string>();
  const visit = (tag: string) => ({
    field: (field: string, isDescribed: boolean) => {
      all.add(`${tag} ${field}`);
      if (!isDescribed) missing.add(`${tag} ${field}`);
    },
    schema: (schema: Json, prefix: string) =>
      walk(schema, prefix, (field, isDescribed) => {
        all.add(`${tag} ${field}`);
        if (!isDescribed) missing.add(`${tag} ${field}`);
      }),
  });
  for (const methods of Object.values(document.paths) as Json[])
    for (const op of Object.values(methods) as Json[]) {
      const at = visit(op.tags[0]);
      for (const p of op.parameters) at.field(p.in === "path" ? `{${p.name}}` : `?${p.name}`, described(p));
      const body = op.requestBody?.content["application/json"].schema;
      if (body) at.schema(body, "body.");
      for (const [status, answer] of Object.entries(op.responses) as [string, Json][]) {
        if (Number(status) >= 400) continue;
        const json = answer.content?.["application/json"]?.schema;
        if (json) at.schema(json, "");
        const event = answer.content?.["text/event-stream"]?.schema;
        if (event) {
          // `id` only on a resumable stream's events.
          const { id, data } = event.properties;
          at.schema({ properties: id ? { id, data } : { data } }, "event.");
          at.schema(event.properties.data.contentSchema, "event.data.");
        }
      }
    }
  visit("ErrorBody").schema(document.components.schemas.ErrorBody, "");
  return { missing: [...missing].sort(), total: all.size };
}
