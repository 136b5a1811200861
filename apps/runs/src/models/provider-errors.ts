import { AISDKError, APICallError, RetryError, StreamProviderError } from "ai";
import { ModelFailure } from "./port.ts";

/**
 * Turns what the AI SDK threw into FAILED or ERROR (docs/behaviour.md §5). Only a
 * provider that understood the request and refused it is FAILED; anything that
 * says "try again later" (408, 429, 5xx, no connection) is the platform's ERROR,
 * reached only after the SDK's bounded retries.
 */
export function classifyProviderError(error: unknown): ModelFailure {
  // Retries exhausted (or a non-retryable error on a later attempt): the last
  // attempt's error decides.
  if (RetryError.isInstance(error)) return classifyProviderError(error.lastError);
  if (APICallError.isInstance(error) || StreamProviderError.isInstance(error)) {
    const status = error.statusCode;
    if (status !== undefined && rejects(status)) {
      return new ModelFailure(
        "failed",
        "ProviderRejected",
        `the model provider rejected the request (${status}): ${error.message}`,
        {
          cause: error,
        },
      );
    }
    const what = status === undefined ? "could not be reached" : `answered ${status}`;
    return new ModelFailure("error", "ProviderUnavailable", `the model provider ${what}: ${error.message}`, {
      cause: error,
    });
  }
  if (AISDKError.isInstance(error)) {
    // Malformed responses, empty bodies and the like: the provider is
    // misbehaving, which is not the request's fault.
    return new ModelFailure(
      "error",
      "ProviderInvalidResponse",
      `the model provider's answer was unusable: ${error.message}`,
      {
        cause: error,
      },
    );
  }
  // A stream cut mid-answer surfaces as undici's TypeError ("terminated"), a
  // timeout as a TimeoutError: the connection failed, the request was fine.
  const message = error instanceof Error ? error.message : String(error);
  return new ModelFailure("error", "ProviderUnavailable", `the model provider could not be reached: ${message}`, {
    cause: error,
  });
}

/** 4xx is the request's fault, except 408 (timeout) and 429 (rate limit), which pass with time. */
function rejects(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}
