import { useEffect, useMemo, useState } from "preact/hooks";
import { type Connected, connection, logout } from "../lib/connection.js";
import { type ConsoleModel, createConsoleModel } from "../lib/console-model.js";
import { useStore } from "../lib/store.js";
import { BindingsView } from "./BindingsView.js";
import { OutboxView } from "./OutboxView.js";
import { RunsView } from "./RunsView.js";
import { RunTreeView } from "./RunTreeView.js";
import { SessionDetail } from "./SessionDetail.js";
import { SessionsTree } from "./SessionsTree.js";

const TABS = ["sessions", "runs", "outbox", "bindings"] as const;
type Tab = (typeof TABS)[number];

function Header({ connected, tab, onTab }: { connected: Connected; tab: Tab; onTab: (tab: Tab) => void }) {
  const { offline } = useStore(connection);
  return (
    <header class="top">
      <div class="brand">
        <strong>sessions</strong> console
        {!connected.canWrite && (
          <span class="tag readonly" title="This token has read scope only">
            read-only
          </span>
        )}
        <span class={offline ? "tag offline" : "tag online"} role="status">
          {offline ? "reconnecting…" : "connected"}
        </span>
      </div>
      <nav aria-label="Console sections">
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            aria-current={tab === t ? "page" : undefined}
            onClick={() => onTab(t)}
          >
            {t[0]?.toUpperCase() + t.slice(1)}
          </button>
        ))}
        <a href="/chat">Web chat</a>
        <button type="button" onClick={logout}>
          Log out
        </button>
      </nav>
    </header>
  );
}

function SessionsPage({
  model,
  selected,
  onSelect,
}: {
  model: ConsoleModel;
  selected: string | undefined;
  onSelect: (key: string | undefined) => void;
}) {
  const sessions = useStore(model.sessions);
  const info = sessions.find((s) => s.row.key === selected);
  return (
    <div class={info ? "split has-detail" : "split"}>
      <SessionsTree model={model} selected={selected} onSelect={onSelect} />
      {info ? (
        <SessionDetail model={model} info={info} onSelect={onSelect} onBack={() => onSelect(undefined)} />
      ) : (
        <section class="detail empty" aria-label="Session">
          <p class="muted">{selected ? "That session is gone." : "Pick a session to see its transcript."}</p>
        </section>
      )}
    </div>
  );
}

/** The operator console: sessions tree and transcripts, runs, outbox, thread bindings. */
export function Console({ connected }: { connected: Connected }) {
  const model = useMemo(() => createConsoleModel(connected.client, connected.canWrite), [connected]);
  useEffect(() => () => model.stop(), [model]);
  const [tab, setTab] = useState<Tab>("sessions");
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [treeRun, setTreeRun] = useState<string | undefined>(undefined);
  const select = (key: string | undefined) => {
    setSelected(key);
    setTab("sessions");
  };
  return (
    <div class="console">
      <Header connected={connected} tab={tab} onTab={setTab} />
      <main>
        {tab === "sessions" && <SessionsPage model={model} selected={selected} onSelect={select} />}
        {tab === "runs" && treeRun !== undefined && (
          <RunTreeView
            model={model}
            runId={treeRun}
            onSelect={select}
            onClose={() => setTreeRun(undefined)}
          />
        )}
        {tab === "runs" && <RunsView model={model} onSelect={select} onTree={setTreeRun} />}
        {tab === "outbox" && <OutboxView model={model} onSelect={select} />}
        {tab === "bindings" && <BindingsView model={model} onSelect={select} />}
      </main>
    </div>
  );
}
