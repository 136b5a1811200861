import type { Resource as Json } from "./k8s-rendered.ts";

/** Kinds that run pods, and where their pod template is. */
export const workloadKinds = new Set(["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"]);

export function podTemplate(workload: Json): Json {
  return (workload.kind === "CronJob" ? workload.spec?.jobTemplate?.spec?.template : workload.spec?.template) ?? {};
}

export function podLabels(workload: Json): Record<string, string> {
  return podTemplate(workload).metadata?.labels ?? {};
}

/** Does a Kubernetes label selector (matchLabels and matchExpressions) select these labels? An empty selector selects everything. */
export function selects(selector: Json | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries<string>(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels;
    if (operator === "In" && !(has && values.includes(labels[key]))) return false;
    if (operator === "NotIn" && has && values.includes(labels[key])) return false;
    if (operator === "Exists" && !has) return false;
    if (operator === "DoesNotExist" && has) return false;
  }
  return true;
}

export function isEmptySelector(selector: Json | undefined): boolean {
  return (
    selector !== undefined &&
    Object.keys(selector.matchLabels ?? {}).length === 0 &&
    (selector.matchExpressions ?? []).length === 0
  );
}

/** The smallest number of pods a workload runs: its autoscaler's minimum where one owns it, else `replicas` (default 1). */
export function minimumReplicas(workload: Json, resources: Json[]): number {
  const hpa = resources.find(
    (r) =>
      r.kind === "HorizontalPodAutoscaler" &&
      r.spec?.scaleTargetRef?.kind === workload.kind &&
      r.spec?.scaleTargetRef?.name === workload.metadata?.name,
  );
  return hpa ? (hpa.spec?.minReplicas ?? 1) : (workload.spec?.replicas ?? 1);
}

export function nameOf(resource: Json): string {
  return `${resource.kind}/${resource.metadata?.name}`;
}
