/** Bus subjects between runs replicas (internal to this service). */
export const runSubjects = {
  /** A run was queued: workers look now instead of at their next poll. */
  queued: "loom.runs.queued",
  /** Cancel reaches the replica whose worker holds the run. Payload: "cancel". */
  control: (runId: string) => `loom.runs.${runId}.control`,
  controlAll: "loom.runs.*.control",
};
