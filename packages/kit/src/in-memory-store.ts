/** The lifecycle of a store kept in the process's memory: nothing to set up, always ready, nothing to close. */
export const inMemoryLifecycle = {
  init: async (): Promise<void> => {},
  ready: async (): Promise<boolean> => true,
  close: async (): Promise<void> => {},
};
