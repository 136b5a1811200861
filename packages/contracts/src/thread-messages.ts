/**
 * Bounds of thread messages (docs/behaviour.md §5): the gateway and the runs
 * service both check them. A griptape conversation memory's whole window fits.
 */

/** Messages one CreateThread or UpdateThread body may carry; also a whole thread's page of ListMessages. */
export const maxMessagesPerBody = 1000;
/** Characters of one message's `input`, and of its `output` (1 Mi, the gateway's default body limit in bytes). */
export const maxMessageTextLength = 1024 * 1024;
