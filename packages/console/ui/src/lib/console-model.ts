import type { GatewayClient } from "@sessions/gateway-client";
import { onGap } from "./connection.js";
import { type LiveRun, recheckRuns, trackRuns } from "./runs.js";
import { describeRow, type SessionInfo } from "./sessions.js";
import { createStore, type Store } from "./store.js";

/** What the console keeps per connection: every session (live), every run it hears of, the agents. */
export interface ConsoleModel {
  client: GatewayClient;
  canWrite: boolean;
  mainKey: string;
  sessions: Store<SessionInfo[]>;
  sessionsError: Store<string | undefined>;
  runs: Store<LiveRun[]>;
  agents: Store<string[]>;
  refreshSessions(): void;
  stop(): void;
}

const LIST_LIMIT = 1000;

export function createConsoleModel(client: GatewayClient, canWrite: boolean): ConsoleModel {
  const mainKey = client.hello?.snapshot?.sessionDefaults?.mainKey ?? "main";
  const sessions = createStore<SessionInfo[]>([]);
  const sessionsError = createStore<string | undefined>(undefined);
  const agents = createStore<string[]>([]);
  const tracker = trackRuns(client);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  async function load() {
    try {
      const page = await client.sessions.list({ limit: LIST_LIMIT });
      if (!stopped) {
        sessions.set(page.sessions.map((row) => describeRow(row, mainKey)));
        sessionsError.set(page.hasMore ? `Showing the newest ${LIST_LIMIT} sessions.` : undefined);
      }
    } catch (error) {
      if (!stopped) sessionsError.set(error instanceof Error ? error.message : String(error));
    }
  }
  const refreshSessions = () => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void load();
    }, 100);
  };

  // The runs under way now, whoever started them and on whichever gateway (a gateway without `runs.list`, such
  // as OpenClaw's, leaves the console with the runs it hears of).
  const listRuns = () =>
    client.runs.list({ limit: LIST_LIMIT }).then(
      (page) => {
        if (!stopped) tracker.adopt(page.runs);
      },
      () => undefined,
    );
  // Every run, session change and delivery: the console is an operator view. Listed once subscribed, so a run
  // that ends in between is heard of.
  void client.sessions
    .subscribe({ all: true })
    .catch(() => undefined)
    .then(listRuns);
  void load();
  void client.agents.list().then(
    (list) => agents.set(list.agents.map((a) => a.id)),
    () => undefined,
  );
  const offChanged = client.on("sessions.changed", refreshSessions);
  const offGap = onGap(() => {
    refreshSessions();
    void recheckRuns(client, tracker.runs);
    void listRuns();
  });

  return {
    client,
    canWrite,
    mainKey,
    sessions,
    sessionsError,
    runs: tracker.runs,
    agents,
    refreshSessions,
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      tracker.stop();
      offChanged();
      offGap();
    },
  };
}
