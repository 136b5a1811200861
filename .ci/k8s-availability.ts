import type { Resource as Json } from "./k8s-rendered.ts";
import { minimumReplicas, nameOf, podLabels, selects } from "./k8s-selectors.ts";

/**
 * Does every app survive a node drain? A PodDisruptionBudget must leave at
 * least one pod of what it covers running (maxUnavailable below the replica
 * count) and must not block every drain (minAvailable below it); one that
 * covers no workload is a mistake. In production (`production`), every
 * Deployment and StatefulSet runs at least two pods (an autoscaler's minimum
 * counts) and has a PodDisruptionBudget: one pod is an outage at every drain,
 * rollout hiccup or node loss.
 */
export function availabilityViolations(resources: Json[], options: { production: boolean }): string[] {
  const violations: string[] = [];
  const replicated = resources.filter((r) => r.kind === "Deployment" || r.kind === "StatefulSet");
  const budgets = resources.filter((r) => r.kind === "PodDisruptionBudget");

  for (const budget of budgets) {
    const covered = replicated.filter((workload) => selects(budget.spec?.selector, podLabels(workload)));
    if (covered.length === 0) violations.push(`${nameOf(budget)}: selects the pods of no Deployment or StatefulSet`);
    for (const workload of covered) {
      const pods = minimumReplicas(workload, resources);
      const kept = podsKept(budget.spec ?? {}, pods);
      if (kept < 1)
        violations.push(`${nameOf(budget)}: lets a drain take all ${pods} pod(s) of ${nameOf(workload)} (none stays)`);
      else if (kept >= pods)
        violations.push(`${nameOf(budget)}: blocks every drain of ${nameOf(workload)} (keeps ${kept} of ${pods} pods)`);
    }
  }

  if (options.production) {
    for (const workload of replicated) {
      const pods = minimumReplicas(workload, resources);
      if (pods < 2)
        violations.push(
          `${nameOf(workload)}: runs ${pods} pod(s) in production (at least 2: one is an outage at every drain)`,
        );
      if (!budgets.some((budget) => selects(budget.spec?.selector, podLabels(workload))))
        violations.push(`${nameOf(workload)}: no PodDisruptionBudget in production`);
    }
  }
  return violations;
}

/** How many of `pods` pods a budget keeps through voluntary evictions (Kubernetes rounds percentages up). */
function podsKept(spec: Json, pods: number): number {
  const scaled = (value: number | string) =>
    typeof value === "string" && value.endsWith("%")
      ? Math.ceil((pods * Number(value.slice(0, -1))) / 100)
      : Number(value);
  if (spec.maxUnavailable !== undefined) return pods - scaled(spec.maxUnavailable);
  if (spec.minAvailable !== undefined) return scaled(spec.minAvailable);
  return pods;
}
