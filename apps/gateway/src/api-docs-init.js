// The /docs page's script (served as /docs/init.js by api-docs.ts).
//
// Swagger UI resolves an OpenAPI 3.1 document operation by operation
// (swagger-ui#10748): Loom's operations, every one expanded, took 82 s to
// render here, and 6 s when the same document is read as 3.0. So the page
// shows every operation collapsed (one is resolved when a reader opens it),
// and fetches /openapi.json and shows it in 3.0's words, which say the same of
// Loom's schemas: `type: [T, "null"]` is `type: T, nullable: true`, `const`
// a one-value `enum`; `contentMediaType`, `contentEncoding` and
// `propertyNames`, which Swagger UI does not show, are left out.
function as30(schema) {
  if (Array.isArray(schema)) return schema.map(as30);
  if (schema === null || typeof schema !== "object") return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties" || key === "responses" || key === "paths" || key === "content" || key === "schemas") {
      // Maps of names: the keys are names, only the values are schemas.
      out[key] = Object.fromEntries(Object.entries(value).map(([name, member]) => [name, as30(member)]));
    } else if (key === "type" && Array.isArray(value)) {
      const types = value.filter((type) => type !== "null");
      if (types.length === 1) out.type = types[0];
      else out.anyOf = types.map((type) => ({ type }));
      if (types.length < value.length) out.nullable = true;
    } else if (key === "const") {
      out.enum = [value];
    } else if (key !== "contentMediaType" && key !== "contentEncoding" && key !== "propertyNames") {
      out[key] = as30(value);
    }
  }
  return out;
}

fetch("openapi.json")
  .then((answer) => answer.json())
  .then((document) => {
    window.ui = SwaggerUIBundle({
      spec: { ...as30(document), openapi: "3.0.3" },
      dom_id: "#swagger-ui",
      // Grouped by resource (the document's tags), each group open, every operation in it collapsed until opened
      // (so the page renders at once), with its operation id.
      docExpansion: "list",
      displayOperationId: true,
      defaultModelsExpandDepth: 1,
      // No validator badge: Swagger UI would fetch it from validator.swagger.io.
      validatorUrl: null,
    });
  });
