import { A2A_PROTOCOL_VERSION, type AgentCard } from "@a2a-js/sdk";
import { duplicateInterfacesForLegacy } from "@a2a-js/sdk/compat/v0_3";

/** What an agent's card says of it: where it answers, its name, whether callers need a token. */
export interface A2ACardInput {
  agentId: string;
  name?: string | undefined;
  /** The JSON-RPC endpoint callers reach (`<base>/a2a/<agentId>`). */
  url: string;
  /** Callers need a bearer token (the gateway's tokens). */
  bearer: boolean;
}

const TEXT = ["text/plain"];

function describe(input: A2ACardInput): string {
  return `The ${input.name ?? input.agentId} agent of a sessions gateway: each A2A context is a session of this agent, each task one of its runs.`;
}

/** The A2A v1.0 Agent Card of one agent: JSON-RPC at `url` (v1.0, and v0.3 for older peers), text in and out, streaming. */
export function agentCard(input: A2ACardInput): AgentCard {
  return {
    name: input.name ?? input.agentId,
    description: describe(input),
    version: "1.0.0",
    provider: undefined,
    supportedInterfaces: duplicateInterfacesForLegacy(
      [{ url: input.url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION }],
      ["JSONRPC"],
    ),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: input.bearer
      ? {
          bearer: {
            scheme: {
              $case: "httpAuthSecurityScheme",
              value: { description: "a token of the gateway", scheme: "Bearer", bearerFormat: "" },
            },
          },
        }
      : {},
    securityRequirements: input.bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: TEXT,
    defaultOutputModes: TEXT,
    skills: [
      {
        id: "chat",
        name: `Talk to ${input.name ?? input.agentId}`,
        description: "A message in, the agent's reply out; a context keeps the conversation.",
        tags: ["chat", "sessions"],
        examples: [],
        inputModes: TEXT,
        outputModes: TEXT,
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/** The same card as an A2A v0.3 peer reads it (the SDK converts cards for its express router only). */
export function legacyAgentCard(input: A2ACardInput): Record<string, unknown> {
  return {
    protocolVersion: "0.3.0",
    name: input.name ?? input.agentId,
    description: describe(input),
    version: "1.0.0",
    url: input.url,
    preferredTransport: "JSONRPC",
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: TEXT,
    defaultOutputModes: TEXT,
    skills: [
      {
        id: "chat",
        name: `Talk to ${input.name ?? input.agentId}`,
        description: "A message in, the reply out.",
        tags: ["chat"],
      },
    ],
    ...(input.bearer
      ? { securitySchemes: { bearer: { type: "http", scheme: "Bearer" } }, security: [{ bearer: [] }] }
      : {}),
  };
}
