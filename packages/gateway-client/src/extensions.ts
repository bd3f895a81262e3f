import type { HelloOk } from "@sessions/core";
import { GatewayClientError } from "./errors.js";

/**
 * Our wire extensions that an OpenClaw gateway rejects, each with the `hello-ok` capability that allows it: the
 * client sends one only to a gateway whose `features.capabilities` lists it.
 */
const EXTENSIONS: readonly { method: string; field: string; capability: string }[] = [
  { method: "agent", field: "spawnedBy", capability: "agent.spawnedBy" },
  { method: "sessions.subscribe", field: "replay", capability: "sessions.subscribe.replay" },
];

/** The extension a request uses, if any. */
export function extensionOf(
  method: string,
  params: unknown,
): { method: string; field: string; capability: string } | undefined {
  if (params === null || typeof params !== "object") return undefined;
  return EXTENSIONS.find(
    (e) => e.method === method && (params as Record<string, unknown>)[e.field] !== undefined,
  );
}

/** Fails before sending, naming the field, unless the gateway announced the extension's capability. */
export function requireExtension(
  hello: HelloOk,
  extension: { method: string; field: string; capability: string },
): void {
  if (hello.features?.capabilities?.includes(extension.capability)) return;
  const { method, field, capability } = extension;
  throw new GatewayClientError(
    "invalid_params",
    `${method}: this gateway does not accept ${field} (a sessions gateway extension; OpenClaw rejects it)`,
    {
      wireCode: "CLIENT",
      field,
      details: { code: "UNSUPPORTED_BY_GATEWAY", field, capability },
      requestSent: false,
    },
  );
}
