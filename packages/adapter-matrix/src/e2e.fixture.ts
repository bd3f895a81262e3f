// Shared setup of the end-to-end tests: the real matrix-js-sdk against the fake homeserver of @sessions/testing,
// wired to a real gateway with a scripted runner. Not part of the published bundle.
import {
  createGateway,
  createManualClock,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayOptions,
  type ScriptedAgent,
} from "@sessions/gateway";
import {
  createFakeMatrixHomeserver,
  type FakeMatrixHomeserver,
  type MatrixSentEvent,
} from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { ClientEvent, createClient, type MatrixClient, RoomEvent, SyncState } from "matrix-js-sdk";
import { logger as sdkLogger } from "matrix-js-sdk/lib/logger.js";
import { createMatrixAdapter, type MatrixAdapter, type MatrixAdapterConfig } from "./index.js";

sdkLogger.setLevel("silent");
// Logs that a room's state arrived before the room itself, which a real homeserver's first sync of a new room does too.
(sdkLogger.getChild("MatrixRTCSessionManager") as typeof sdkLogger).setLevel("silent");

export interface E2E {
  hs: FakeMatrixHomeserver;
  client: MatrixClient;
  adapter: MatrixAdapter;
  gateway: Gateway;
  clock: ReturnType<typeof createManualClock>;
  /** The bot's `m.room.message` events, in order. */
  messages(): MatrixSentEvent[];
  /**
   * Resolves once the client has put these events on a live room timeline, that is, handed them to the adapter:
   * its listener (registered by `attach`, before the fixture's) has decided on each, ignoring it or queueing it
   * for the gateway behind the room's earlier events.
   */
  handedOver(...eventIds: string[]): Promise<void>;
  /** Resolves once the client knows the room with the bot joined: its name, members and encryption state. */
  joined(roomId: string): Promise<void>;
  close(): Promise<void>;
}

export interface E2EOptions {
  gateway?: Partial<GatewayOptions> | undefined;
  adapter?: Omit<MatrixAdapterConfig, "client"> | undefined;
  /** Runs against the homeserver before the client's first sync (history the bot must not answer). */
  before?: ((hs: FakeMatrixHomeserver) => void | Promise<void>) | undefined;
}

/** Starts the homeserver, a client that has finished its first sync, an attached adapter and a gateway. */
export async function startE2E(
  agents: Record<string, ScriptedAgent>,
  options: E2EOptions = {},
): Promise<E2E> {
  const hs = await createFakeMatrixHomeserver();
  await options.before?.(hs);
  // Events posted before attach have timestamps before it; the clock must move on for the comparison to hold.
  await new Promise((r) => setTimeout(r, 2));
  const client = createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId });
  const adapter = createMatrixAdapter({ client, ...options.adapter });
  const clock = createManualClock();
  const gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents, clock, fallback: () => "ok" }),
    adapters: [adapter],
    clock,
    ...options.gateway,
  });
  adapter.attach(gateway);
  const handed = new Set<string>();
  client.on(RoomEvent.Timeline, (event) => {
    const id = event.getId();
    if (id !== undefined) handed.add(id);
  });
  await gateway.ready;
  const prepared = new Promise<void>((resolve) => {
    const onSync = (state: SyncState) => {
      if (state !== SyncState.Prepared) return;
      client.off(ClientEvent.Sync, onSync);
      resolve();
    };
    client.on(ClientEvent.Sync, onSync);
  });
  await client.startClient({ initialSyncLimit: 20 });
  await prepared;
  return {
    hs,
    client,
    adapter,
    gateway,
    clock,
    messages: () => hs.sent().filter((e) => e.type === "m.room.message"),
    handedOver: (...eventIds) =>
      until(() => eventIds.every((id) => handed.has(id)), `the client to hand over ${eventIds.join(", ")}`),
    joined: (roomId) =>
      until(() => client.getRoom(roomId)?.getMyMembership() === "join", `the client to know room ${roomId}`),
    async close() {
      adapter.detach();
      client.stopClient();
      await gateway.close({ drainMs: 200 });
      await hs.close();
    },
  };
}

/** Polls `check` on real time (the homeserver and the client run on it) until it holds. */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await eventually(check, what);
}

/** The thread root a bot message is attached to, if any. */
export function threadOf(event: MatrixSentEvent | undefined): string | undefined {
  const relation = event?.content["m.relates_to"] as
    | { rel_type?: string | undefined; event_id?: string | undefined }
    | undefined;
  return relation?.rel_type === "m.thread" ? relation.event_id : undefined;
}
