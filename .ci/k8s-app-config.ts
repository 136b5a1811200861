import { loadConfig } from "@loom/runtime/config";
import { appConfigSchemas as schemas } from "./k8s-app-schemas.ts";
import { type Resource, readRendered } from "./k8s-rendered.ts";

/**
 * Would every Loom app of a rendered overlay start? Builds each app
 * container's environment as the kubelet would (env, envFrom, ConfigMap and
 * Secret references, resolved in the rendered resources) and reads it with the
 * app's own configuration schema, the one its main.ts reads at start. Only
 * where the overlay renders the Secrets it references (the example overlay):
 * elsewhere the operator creates them, and the check says it was skipped.
 * Usage: node .ci/k8s-app-config.ts <rendered.yaml>.
 */

const file = process.argv[2];
if (!file) {
  console.error("usage: node .ci/k8s-app-config.ts <rendered.yaml>");
  process.exit(2);
}
const resources = readRendered(file);
const data = (kind: "ConfigMap" | "Secret") =>
  new Map(
    resources
      .filter((r) => r.kind === kind)
      .map((r): [string, Record<string, string>] => {
        const plain: Record<string, string> = { ...r.stringData };
        for (const [key, value] of Object.entries<string>(r.data ?? {}))
          plain[key] = kind === "Secret" ? Buffer.from(value, "base64").toString("utf8") : value;
        return [r.metadata?.name, plain];
      }),
  );
const configMaps = data("ConfigMap");
const secrets = data("Secret");

const problems: string[] = [];
const checked: string[] = [];
const missingSecrets = new Set<string>();
for (const resource of resources.filter((r) => r.kind === "Deployment")) {
  for (const container of (resource.spec?.template?.spec?.containers ?? []) as Resource[]) {
    const app = (container.env ?? []).find((e: Resource) => e.name === "APP")?.value as string | undefined;
    if (!app) continue;
    const schema = schemas[app];
    if (!schema) {
      problems.push(`Deployment/${resource.metadata?.name}: APP=${app} is no Loom app`);
      continue;
    }
    const env = environment(container, missingSecrets);
    if (!env) continue;
    try {
      loadConfig(schema, env);
      checked.push(app);
    } catch (error) {
      problems.push(
        `Deployment/${resource.metadata?.name} (APP=${app}) would not start: ${(error as Error).message.replaceAll("\n", "\n   ")}`,
      );
    }
  }
}

/** The variables a container gets; undefined when a Secret it needs is not rendered. */
function environment(container: Resource, missing: Set<string>): NodeJS.ProcessEnv | undefined {
  const env: NodeJS.ProcessEnv = {};
  let complete = true;
  const lookup = (source: Map<string, Record<string, string>>, ref: Resource): string | undefined => {
    const values = source.get(ref.name);
    if (!values) {
      if (source === secrets) missing.add(ref.name);
      else problems.push(`ConfigMap ${ref.name} is referenced but not rendered`);
      complete = false;
      return undefined;
    }
    if (ref.key !== undefined && values[ref.key] === undefined && !ref.optional)
      problems.push(`${ref.name} has no key ${ref.key}, which is not optional`);
    return ref.key === undefined ? undefined : values[ref.key];
  };
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    const values = (from.configMapRef ? configMaps : secrets).get(ref.name);
    if (values) Object.assign(env, values);
    else if (!ref.optional) lookup(from.configMapRef ? configMaps : secrets, ref);
  }
  for (const variable of container.env ?? []) {
    if (variable.valueFrom?.secretKeyRef) env[variable.name] = lookup(secrets, variable.valueFrom.secretKeyRef);
    else if (variable.valueFrom?.configMapKeyRef)
      env[variable.name] = lookup(configMaps, variable.valueFrom.configMapKeyRef);
    else env[variable.name] = variable.value;
  }
  return complete ? env : undefined;
}

if (problems.length > 0) {
  console.log(`${file}: ${problems.length} configuration problems`);
  for (const problem of problems) console.log(`  ${problem}`);
  process.exit(1);
}
if (checked.length === 0) {
  console.log(
    `${file}: app configuration not checked (the overlay does not render the Secret ${[...missingSecrets].join(", ")})`,
  );
} else {
  console.log(`${file}: every app would start with its configuration (${checked.join(", ")})`);
}
