import { availabilityViolations } from "./k8s-availability.ts";
import { networkViolations } from "./k8s-network.ts";
import { type Resource as Json, readRendered } from "./k8s-rendered.ts";
import { workloadKinds } from "./k8s-selectors.ts";

/**
 * Loom's rules for what runs on a cluster, checked on a rendered overlay
 * (`kustomize build`), which the schema validation cannot express: every
 * container of every workload has resource requests and limits and a locked
 * security context; every long-running container has startup, readiness and
 * liveness probes on ports it declares; Loom's apps probe the endpoints the
 * processes serve (/healthz, /readyz on PORT) and are scraped on METRICS_PORT;
 * a replicated workload spreads over nodes; third-party images are pinned;
 * drains leave every app running (.ci/k8s-availability.ts: with
 * `--production`, two pods at least and a PodDisruptionBudget for each); each
 * workload has an ingress allow-list naming peers and ports, which admits what
 * the apps are configured to reach (.ci/k8s-network.ts).
 * Usage: node .ci/k8s-policy.ts <rendered.yaml> [--production] — prints what
 * it checked, or every violation (and exits 1).
 */

/** Kinds whose containers run until stopped, so need probes (a Job's run to completion). */
const longRunningKinds = new Set(["Deployment", "StatefulSet", "DaemonSet"]);
/** Where Loom's processes answer (packages/server/src/rpc-server.ts, apps/gateway/src/app.ts). */
const loomProbePaths = { startupProbe: "/healthz", livenessProbe: "/healthz", readinessProbe: "/readyz" } as const;
/** Where every Loom process serves /metrics (METRICS_PORT's default). */
const metricsPort = 9464;

const file = process.argv[2];
const production = process.argv.includes("--production");
if (!file) {
  console.error("usage: node .ci/k8s-policy.ts <rendered.yaml> [--production]");
  process.exit(2);
}
const resources = readRendered(file);

const violations: string[] = [];
const configMaps = new Map(
  resources
    .filter((r) => r.kind === "ConfigMap")
    .map((r) => [r.metadata?.name as string, (r.data ?? {}) as Record<string, string>]),
);
/** Workloads whose replica count an autoscaler owns, with its minimum. */
const autoscaled = new Map(
  resources
    .filter((r) => r.kind === "HorizontalPodAutoscaler")
    .map((r) => [
      `${r.spec?.scaleTargetRef?.kind}/${r.spec?.scaleTargetRef?.name}`,
      (r.spec?.minReplicas ?? 1) as number,
    ]),
);

let workloads = 0;
let containers = 0;
for (const resource of resources) {
  if (!workloadKinds.has(resource.kind)) continue;
  workloads++;
  const name = `${resource.kind}/${resource.metadata?.name}`;
  const template: Json =
    resource.kind === "CronJob" ? resource.spec?.jobTemplate?.spec?.template : resource.spec?.template;
  const pod: Json = template?.spec ?? {};
  const podSecurity: Json = pod.securityContext ?? {};
  const fail = (what: string) => violations.push(`${name}: ${what}`);

  const replicas = Math.max(resource.spec?.replicas ?? 1, autoscaled.get(name) ?? 0);
  if (resource.kind !== "DaemonSet" && replicas > 1 && !(pod.topologySpreadConstraints?.length > 0)) {
    fail(`${replicas} replicas but no topologySpreadConstraints`);
  }
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) fail("shares a host namespace (hostNetwork, hostPID or hostIPC)");

  const all: Json[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  for (const container of all) {
    containers++;
    const where = (what: string) => fail(`container ${container.name}: ${what}`);
    const long = longRunningKinds.has(resource.kind) && (pod.containers ?? []).includes(container);

    for (const kind of ["requests", "limits"] as const) {
      for (const unit of ["cpu", "memory"]) {
        if (container.resources?.[kind]?.[unit] === undefined) where(`no resources.${kind}.${unit}`);
      }
    }

    const security: Json = container.securityContext ?? {};
    if ((security.runAsNonRoot ?? podSecurity.runAsNonRoot) !== true) where("runAsNonRoot is not true");
    if ((security.runAsUser ?? podSecurity.runAsUser) === 0) where("runs as user 0 (root)");
    if (security.allowPrivilegeEscalation !== false) where("allowPrivilegeEscalation is not false");
    if (security.privileged === true) where("is privileged");
    if (security.readOnlyRootFilesystem !== true) where("readOnlyRootFilesystem is not true");
    if (!(security.capabilities?.drop ?? []).includes("ALL")) where("capabilities.drop lacks ALL");
    if ((security.capabilities?.add ?? []).length > 0)
      where(`adds capabilities ${security.capabilities.add.join(", ")}`);
    if ((security.seccompProfile?.type ?? podSecurity.seccompProfile?.type) !== "RuntimeDefault")
      where("seccompProfile is not RuntimeDefault");

    const image = String(container.image ?? "");
    const tag = image.includes("@") ? "digest" : (image.split("/").pop()!.split(":")[1] ?? "");
    // Loom's own image is pinned by the overlay (`images:`); every other one here.
    if (image.split(":")[0] !== "loom" && (tag === "" || tag === "latest"))
      where(`image ${image} is not pinned to a version`);

    if (!long) continue;
    const ports: Json[] = container.ports ?? [];
    const declares = (port: unknown) => ports.some((p) => p.name === port || p.containerPort === port);
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"] as const) {
      const handler: Json | undefined = container[probe];
      if (!handler) {
        where(`no ${probe}`);
        continue;
      }
      const port = handler.httpGet?.port ?? handler.tcpSocket?.port ?? handler.grpc?.port;
      if (port !== undefined && !declares(port))
        where(`${probe} probes port ${port}, which the container does not declare`);
    }

    // Loom's apps: what their processes really serve.
    const app = envValue(container, "APP");
    if (app === undefined) continue;
    const listen = envValue(container, "PORT");
    const http = ports.find((p) => p.name === "http");
    if (listen === undefined) where("sets no PORT, so the manifest does not say where the process listens");
    else if (http?.containerPort !== Number(listen))
      where(`listens on PORT ${listen}, but its port "http" is ${http ? http.containerPort : "not declared"}`);
    for (const [probe, path] of Object.entries(loomProbePaths)) {
      const get: Json | undefined = container[probe]?.httpGet;
      if (get && (get.path !== path || get.port !== "http"))
        where(`${probe} is not GET ${path} on port http (the process serves it there)`);
    }
    const configuredMetrics = Number(envValue(container, "METRICS_PORT") ?? metricsPort);
    const annotations: Json = template?.metadata?.annotations ?? {};
    if (annotations["prometheus.io/scrape"] !== "true") where('pod lacks the annotation prometheus.io/scrape: "true"');
    if (Number(annotations["prometheus.io/port"]) !== configuredMetrics)
      where(`prometheus.io/port is not METRICS_PORT (${configuredMetrics})`);
    if (!ports.some((p) => p.containerPort === configuredMetrics))
      where(`does not declare its metrics port ${configuredMetrics}`);
  }
}

/** A container's plain variable, from `env` or from a rendered ConfigMap it reads whole (`envFrom`). */
function envValue(container: Json, key: string): string | undefined {
  const own = (container.env ?? []).find((e: Json) => e.name === key);
  if (own) return own.value;
  for (const source of container.envFrom ?? []) {
    const value = source.configMapRef ? configMaps.get(source.configMapRef.name)?.[key] : undefined;
    if (value !== undefined) return value;
  }
  return undefined;
}

// One line each: a Service reached at three hosts (mongo-0.mongo, …) is one finding.
violations.push(...new Set([...availabilityViolations(resources, { production }), ...networkViolations(resources)]));

if (violations.length > 0) {
  console.log(`${file}: ${violations.length} policy violations`);
  for (const violation of violations) console.log(`  ${violation}`);
  process.exit(1);
}
if (workloads === 0) {
  console.log(`${file}: no workloads to check`);
  process.exit(1);
}
console.log(
  `${file}: ${workloads} workloads, ${containers} containers: limits, security context, probes, spread and scraping as required; ` +
    `drains keep every app running${production ? " (production: 2 pods at least, a PodDisruptionBudget each)" : ""}; ingress allow-lists name peers and ports and admit what the apps reach`,
);
