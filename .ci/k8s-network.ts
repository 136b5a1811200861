import { appConfigSchemas } from "./k8s-app-schemas.ts";
import type { Resource as Json } from "./k8s-rendered.ts";
import { isEmptySelector, nameOf, podLabels, podTemplate, selects, workloadKinds } from "./k8s-selectors.ts";

/**
 * Per-workload ingress allow-lists. Every pod is selected by a NetworkPolicy
 * for ingress, and every rule of the policies that select it names its ports
 * (ports the pod declares) and its peers: a rule that admits every pod of the
 * namespace (`podSelector: {}`) is refused, and a rule open to anyone (no
 * `from`) only on a policy whose annotation `loom.dev/open-to` says who needs
 * it. Then the other way round, so an allow-list cannot be too tight either:
 * every address a container is configured with (an env value such as
 * `http://identity:8081` or `mongodb://mongo-0.mongo:27017,…`) that names a
 * Service of the overlay must be admitted by the policies of the pods behind it.
 * A Loom app counts only the variables its configuration schema reads (every
 * app gets all of loom-config, but only the gateway calls identity).
 */
export const openToAnnotation = "loom.dev/open-to";

const defaultPorts: Record<string, number> = { http: 80, https: 443, nats: 4222, mongodb: 27017 };

export function networkViolations(resources: Json[]): string[] {
  const violations: string[] = [];
  const policies = resources.filter((r) => r.kind === "NetworkPolicy" && isIngress(r));
  const workloads = resources.filter((r) => workloadKinds.has(r.kind));

  for (const workload of workloads) {
    const labels = podLabels(workload);
    const fail = (what: string) => violations.push(`${nameOf(workload)}: ${what}`);
    const selecting = policies.filter((policy) => selects(policy.spec?.podSelector, labels));
    if (selecting.length === 0) fail("no NetworkPolicy selects its pods, so every peer reaches every port");
    const ports = declaredPorts(workload);
    for (const policy of selecting) {
      for (const rule of policy.spec?.ingress ?? []) {
        const by = nameOf(policy);
        if (!(rule.ports?.length > 0)) fail(`${by} admits every port`);
        for (const { port } of rule.ports ?? [])
          if (port !== undefined && !ports.some((p) => p.name === port || p.containerPort === port))
            fail(`${by} admits port ${port}, which its containers do not declare`);
        const from: Json[] = rule.from ?? [];
        if (from.length === 0 && !policy.metadata?.annotations?.[openToAnnotation])
          fail(`${by} admits anyone (no \`from\`) without the annotation ${openToAnnotation} saying who needs it`);
        for (const peer of from) {
          if (isEmptySelector(peer.podSelector) && !peer.namespaceSelector)
            fail(`${by} admits every pod of the namespace`);
        }
      }
    }
  }

  for (const { caller, variable, service, port } of configuredAddresses(resources, workloads)) {
    const servicePort = (service.spec?.ports ?? []).find((p: Json) => p.port === port);
    if (!servicePort) {
      violations.push(
        `${nameOf(caller)}: ${variable} names port ${port} of ${nameOf(service)}, which the Service does not have`,
      );
      continue;
    }
    // A Service's selector is a plain label map.
    for (const target of workloads.filter((w) =>
      selects({ matchLabels: service.spec?.selector ?? {} }, podLabels(w)),
    )) {
      const containerPort = declaredPorts(target).find(
        (p) => p.name === servicePort.targetPort || p.containerPort === (servicePort.targetPort ?? servicePort.port),
      );
      if (!admits(policies, target, containerPort, podLabels(caller))) {
        violations.push(
          `${nameOf(caller)}: ${variable} reaches ${nameOf(service)} port ${port}, but no NetworkPolicy of ${nameOf(target)} admits it there`,
        );
      }
    }
  }
  return violations;
}

function isIngress(policy: Json): boolean {
  return (policy.spec?.policyTypes ?? ["Ingress"]).includes("Ingress");
}

function declaredPorts(workload: Json): Json[] {
  return (podTemplate(workload).spec?.containers ?? []).flatMap((c: Json) => c.ports ?? []);
}

/** Would `target`'s pods accept a connection from a pod labelled `from` (same namespace) on `port`? Unselected pods accept anything. */
function admits(policies: Json[], target: Json, port: Json | undefined, from: Record<string, string>): boolean {
  const selecting = policies.filter((policy) => selects(policy.spec?.podSelector, podLabels(target)));
  if (selecting.length === 0) return true;
  return selecting.some((policy) =>
    (policy.spec?.ingress ?? []).some(
      (rule: Json) =>
        (!(rule.ports?.length > 0) ||
          rule.ports.some(
            (p: Json) => p.port === undefined || p.port === port?.name || p.port === port?.containerPort,
          )) &&
        (!(rule.from?.length > 0) || rule.from.some((peer: Json) => isPeer(peer, from))),
    ),
  );
}

/** Does a `from` peer match a pod of the same namespace labelled `labels`? (A namespaceSelector counts only when empty: all namespaces.) */
function isPeer(peer: Json, labels: Record<string, string>): boolean {
  if (peer.ipBlock) return false;
  if (peer.namespaceSelector && !isEmptySelector(peer.namespaceSelector)) return false;
  return peer.podSelector === undefined || selects(peer.podSelector, labels);
}

/** Every (workload, env variable, Service, port) where a container's configuration names a Service of the overlay. */
function configuredAddresses(
  resources: Json[],
  workloads: Json[],
): { caller: Json; variable: string; service: Json; port: number }[] {
  const services = new Map(resources.filter((r) => r.kind === "Service").map((s) => [s.metadata?.name as string, s]));
  const data = (kind: string) =>
    new Map(resources.filter((r) => r.kind === kind).map((r) => [r.metadata?.name as string, r]));
  const configMaps = data("ConfigMap");
  const secrets = data("Secret");
  const found: { caller: Json; variable: string; service: Json; port: number }[] = [];
  for (const caller of workloads) {
    for (const container of podTemplate(caller).spec?.containers ?? []) {
      const env = environment(container, configMaps, secrets);
      const reads =
        env.APP && appConfigSchemas[env.APP] ? new Set(Object.keys(appConfigSchemas[env.APP]!.shape)) : undefined;
      for (const [variable, value] of Object.entries(env)) {
        if (reads && !reads.has(variable)) continue;
        const address = /^([a-z][a-z0-9+.-]*):\/\/(?:[^@/]*@)?([^/?#]+)/i.exec(value);
        if (!address) continue;
        const scheme = address[1]!.toLowerCase().replace(/\+srv$/, "");
        for (const hostPort of address[2]!.split(",")) {
          const [host, explicit] = hostPort.split(":");
          // `identity`, `identity.loom.svc…`, or a StatefulSet pod behind a headless Service: `mongo-0.mongo`.
          const labels = host!.split(".");
          const service =
            services.get(labels[0]!) ??
            (labels.length > 1 && services.get(labels[1]!)?.spec?.clusterIP === "None"
              ? services.get(labels[1]!)
              : undefined);
          const port = explicit ? Number(explicit) : defaultPorts[scheme];
          if (service && port) found.push({ caller, variable, service, port });
        }
      }
    }
  }
  return found;
}

/** A container's plain environment: `env` values and those of the ConfigMaps and Secrets it reads (where the overlay renders them). */
function environment(
  container: Json,
  configMaps: Map<string, Json>,
  secrets: Map<string, Json>,
): Record<string, string> {
  const secretData = (secret: Json | undefined): Record<string, string> => ({
    ...Object.fromEntries(
      Object.entries<string>(secret?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
    ),
    ...secret?.stringData,
  });
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, configMaps.get(source.configMapRef.name)?.data);
    if (source.secretRef) Object.assign(env, secretData(secrets.get(source.secretRef.name)));
  }
  for (const entry of container.env ?? []) {
    const from = entry.valueFrom;
    const value =
      entry.value ??
      (from?.configMapKeyRef
        ? configMaps.get(from.configMapKeyRef.name)?.data?.[from.configMapKeyRef.key]
        : from?.secretKeyRef
          ? secretData(secrets.get(from.secretKeyRef.name))[from.secretKeyRef.key]
          : undefined);
    if (value !== undefined) env[entry.name] = value;
  }
  return env;
}
