/**
 * The API key, for this browser tab's session only: sessionStorage, never a
 * URL, a cookie or localStorage, so closing the tab forgets it.
 */
const storageKey = "loom.apiKey";

export const savedKey = (): string | null => sessionStorage.getItem(storageKey);
export const saveKey = (key: string): void => sessionStorage.setItem(storageKey, key);
export const forgetKey = (): void => sessionStorage.removeItem(storageKey);
