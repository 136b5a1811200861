/** Bounds of a structure run's spans (docs/behaviour.md §6): the gateway checks them first, the events service again. */
export const spanBounds = { maxBatch: 1000, maxIdLength: 100, maxNameLength: 200, maxEvents: 1000 } as const;
