import type { GatewayContext } from "../context.js";
import { traceRuns } from "./run-spans.js";

/**
 * Traces runs with `@opentelemetry/api` when it is installed (an optional peer): the spans go to whatever tracer
 * provider the application registers, now or later. Without the package nothing is loaded; without a provider the
 * hooks return at once. Resolves to the unsubscribe, or undefined.
 */
export async function loadTracing(
  ctx: Pick<GatewayContext, "config" | "store" | "logger" | "lifecycle">,
): Promise<(() => void) | undefined> {
  let api: typeof import("@opentelemetry/api");
  try {
    api = await import("@opentelemetry/api");
  } catch {
    return undefined;
  }
  return ctx.lifecycle.subscribe(traceRuns(ctx, api));
}
