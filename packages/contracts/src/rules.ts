/** Most characters of a rule given as a string (docs/api.md §4); the gateway and the assistants service both check it. */
export const maxRuleLength = 10_000;
