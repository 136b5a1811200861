import { randomUUID } from "node:crypto";
import { imageSize } from "image-size";

/**
 * A griptape artifact as griptape serializes it (`to_dict`): exactly its class's keys, in its order, never
 * `module_name` (griptape would import by it). An extra key makes griptape's `from_dict` raise, so every artifact
 * here is built by the functions below (docs/behaviour.md, Tool runs).
 */
export type Artifact = Record<string, unknown> & { type: string };

/** griptape's default id: a uuid4's hex. */
const artifactId = () => randomUUID().replaceAll("-", "");

/** The keys every artifact has, in griptape's order: type, id, reference, meta, name, value. */
function base(type: string, value: unknown, fields: { name?: string; meta?: Record<string, unknown> } = {}) {
  const id = artifactId();
  return { type, id, reference: null, meta: fields.meta ?? {}, name: fields.name ?? id, value };
}

export const textArtifact = (value: string): Artifact => base("TextArtifact", value);
export const errorArtifact = (value: string): Artifact => base("ErrorArtifact", value);
export const urlArtifact = (value: string): Artifact => base("UrlArtifact", value);

/** A JSON value; griptape reads a string `value` as JSON text, so a string is given as a TextArtifact instead. */
export const jsonArtifact = (value: unknown): Artifact =>
  typeof value === "string" ? textArtifact(value) : base("JsonArtifact", value ?? null);

/** Bytes griptape has no richer class for: base64, with their media type in `meta`. */
export const blobArtifact = (base64: string, mimeType: string | undefined): Artifact =>
  base("BlobArtifact", base64, mimeType ? { meta: { mime_type: mimeType } } : {});

export const listArtifact = (items: Artifact[]): Artifact => ({
  ...base("ListArtifact", items),
  item_separator: "\n\n",
  validate_uniform_types: false,
});

/**
 * An image: base64 bytes, their format, and the width and height griptape requires, read from the image's header
 * (image-size: PNG, JPEG, GIF, WebP and more). An image whose size cannot be read is kept as a BlobArtifact.
 */
export function imageArtifact(base64: string, mimeType: string | undefined): Artifact {
  let size: ReturnType<typeof imageSize>;
  try {
    // An exact copy: image-size reads through DataViews over the whole ArrayBuffer from the view's offset, and a
    // small Buffer is a slice of Node's shared pool, so the bytes after the image (other data) would be read too.
    size = imageSize(new Uint8Array(Buffer.from(base64, "base64")));
  } catch {
    return blobArtifact(base64, mimeType);
  }
  if (!size.width || !size.height) return blobArtifact(base64, mimeType);
  const format = mimeType?.match(/^image\/([a-z0-9.+-]+)/i)?.[1]?.toLowerCase() ?? size.type ?? "png";
  // griptape's name for an image whose name is its id: image_artifact_<yymmddHHMMSS>_<4 chars>.<format>.
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(2, 14);
  const name = `image_artifact_${stamp}_${artifactId().slice(0, 4)}.${format}`;
  return { ...base("ImageArtifact", base64, { name }), format, width: size.width, height: size.height };
}

/** Text that is a JSON object or array is a JsonArtifact; any other text a TextArtifact. */
export function artifactOfText(text: string): Artifact {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return jsonArtifact(JSON.parse(trimmed));
    } catch {
      // Not JSON after all: text.
    }
  }
  return textArtifact(text);
}

/** One artifact for several results: the one itself, or a ListArtifact of them (an empty text for none). */
export const oneArtifact = (items: Artifact[]): Artifact =>
  items.length === 1 ? items[0]! : items.length === 0 ? textArtifact("") : listArtifact(items);

/** The keys of griptape's artifact classes Loom passes on, after the common ones. */
const extraKeys: Record<string, string[]> = {
  TextArtifact: [],
  JsonArtifact: [],
  ErrorArtifact: [],
  InfoArtifact: [],
  BlobArtifact: [],
  BooleanArtifact: [],
  GenericArtifact: [],
  UrlArtifact: [],
  ImageUrlArtifact: [],
  ImageArtifact: ["format", "width", "height"],
  ListArtifact: ["item_separator", "validate_uniform_types"],
};

/** A ListArtifact's keys that griptape defaults when absent. */
const listDefaults: Record<string, unknown> = { item_separator: "\n\n", validate_uniform_types: false };

/**
 * An artifact a griptape tool server answered, reduced to the keys griptape reads back (anything else it sent would
 * make griptape raise); undefined when it is not one of the artifact classes Loom knows.
 */
export function knownArtifact(value: unknown): Artifact | undefined {
  if (!isObject(value) || typeof value.type !== "string" || !(value.type in extraKeys) || !("value" in value))
    return undefined;
  const type = value.type;
  let inner = value.value;
  if (type === "ListArtifact") {
    if (!Array.isArray(inner)) return undefined;
    const items = inner.map(knownArtifact);
    if (items.some((item) => item === undefined)) return undefined;
    inner = items;
  }
  if (type === "JsonArtifact" && typeof inner === "string") return undefined;
  const id = typeof value.id === "string" ? value.id : artifactId();
  const artifact: Artifact = {
    type,
    id,
    // A reference has a shape of its own; what a server sent there is not checked, so it is not passed on.
    reference: null,
    meta: isObject(value.meta) ? value.meta : {},
    name: typeof value.name === "string" ? value.name : id,
    value: inner,
  };
  for (const key of extraKeys[type]!) {
    if (key in value) artifact[key] = value[key];
    else if (key in listDefaults) artifact[key] = listDefaults[key];
    else return undefined;
  }
  return artifact;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
