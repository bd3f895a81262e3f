// Shared setup of the end-to-end tests: a fake Slack, the real bolt App (Socket Mode or HTTP), a gateway.
import type { AddressInfo } from "node:net";
import {
  createGateway,
  createManualClock,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayOptions,
  type ManualClock,
  type ScriptedAgent,
} from "@sessions/gateway";
import { createFakeSlack, type FakeSlack } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { App, LogLevel } from "@slack/bolt";
import { expect } from "vitest";
import { createSlackAdapter, type SlackAdapter, type SlackAdapterConfig } from "./index.js";

export interface SlackHarness {
  slack: FakeSlack;
  app: App;
  adapter: SlackAdapter;
  gateway: Gateway;
  clock: ManualClock;
  /** Delivers an Events API body the way the app receives them (Socket Mode envelope or signed POST). */
  send(body: Record<string, unknown>): Promise<void>;
  /** The request URL in HTTP mode. */
  url?: string | undefined;
  /**
   * Resolves once the app has finished with every event it has received so far: bolt has run the adapter's
   * listeners to their end, so each event was ignored or handed to the gateway, which recorded its run. Slack
   * acknowledges an event before its listeners run (`send` resolves at the ack), so this, not the ack, is what a
   * test that asserts nothing happened waits for.
   */
  handled(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  mode?: "socket" | "http" | undefined;
  /** Install the app in every fake workspace (bolt `authorize` + adapter `botToken` lookup). */
  multiWorkspace?: boolean | undefined;
  gateway?: Partial<GatewayOptions> | undefined;
  adapter?: Omit<SlackAdapterConfig, "app"> | undefined;
}

export async function startSlack(
  agents: Record<string, ScriptedAgent>,
  options: HarnessOptions = {},
): Promise<SlackHarness> {
  const mode = options.mode ?? "socket";
  const slack = await createFakeSlack();
  const [acme] = slack.teams;
  const clock = createManualClock();
  const auth = options.multiWorkspace
    ? {
        authorize: async ({ teamId }: { teamId?: string | undefined }) => {
          const team = slack.team(teamId ?? "");
          return { botToken: team.botToken, botUserId: team.botUserId, botId: team.botId, teamId: team.id };
        },
      }
    : { token: acme?.botToken as string };
  const app = new App({
    ...auth,
    ...(mode === "socket"
      ? { appToken: slack.appToken, socketMode: true }
      : { signingSecret: slack.signingSecret }),
    clientOptions: { slackApiUrl: slack.apiUrl },
    logLevel: LogLevel.ERROR,
  });
  const adapter = createSlackAdapter({
    app,
    ...(options.multiWorkspace ? { botToken: (teamId: string) => slack.team(teamId).botToken } : {}),
    ...options.adapter,
  });
  const gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents, clock, fallback: () => "ok" }),
    adapters: [adapter],
    clock,
    ...options.gateway,
  });
  adapter.attach(gateway);
  // Every event bolt processes (both receivers call `processEvent`, which returns once the listeners have).
  const processing = new Set<Promise<void>>();
  const processEvent = app.processEvent.bind(app);
  app.processEvent = (event) => {
    const done = processEvent(event);
    const tracked = done.then(
      () => undefined,
      () => undefined,
    );
    processing.add(tracked);
    void tracked.then(() => processing.delete(tracked));
    return done;
  };
  await gateway.ready;
  let url: string | undefined;
  if (mode === "socket") {
    await app.start();
  } else {
    const server = (await app.start({ port: 0, host: "127.0.0.1" })) as { address(): AddressInfo };
    url = `http://127.0.0.1:${server.address().port}/slack/events`;
  }
  return {
    slack,
    app,
    adapter,
    gateway,
    clock,
    ...(url === undefined ? {} : { url }),
    async send(body) {
      if (url === undefined) {
        const envelope = await slack.sendEvent(body);
        expect(envelope.acked).toBe(true);
      } else {
        const res = await slack.postEvent(url, body);
        expect(res.status).toBe(200);
      }
    },
    async handled() {
      while (processing.size > 0) await Promise.all(processing);
    },
    async close() {
      await app.stop().catch(() => undefined);
      await gateway.close({ drainMs: 200 });
      await slack.close();
    },
  };
}

/** Polls until `check` holds (the gateway and bolt work asynchronously after an event is acknowledged). */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await eventually(check, what);
}

/** Every run the gateway has recorded, whatever its status. */
export const recordedRuns = (gateway: Gateway) =>
  gateway.store.listRunsByStatus(["queued", "running", "ok", "error", "timeout", "aborted"]);
