import { useMemo, useState } from "preact/hooks";
import type { ConsoleModel } from "../lib/console-model.js";
import { ago, nameOf } from "../lib/format.js";
import {
  buildTree,
  countNodes,
  distinct,
  type Filters,
  NO_FILTERS,
  type SessionNode,
} from "../lib/sessions.js";
import { useStore } from "../lib/store.js";

const KINDS = ["main", "group", "cron", "hook", "node", "other"];

function Select(props: {
  id: string;
  label: string;
  value: string;
  options: readonly (string | [string, string])[];
  onChange: (value: string) => void;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {text}
            </option>
          );
        })}
      </select>
    </div>
  );
}

function Node(props: {
  node: SessionNode;
  selected: string | undefined;
  running: ReadonlySet<string>;
  onSelect: (key: string) => void;
}) {
  const { node, selected, running } = props;
  const row = node.row;
  return (
    <li class={node.match ? "node" : "node ancestor"} data-key={row.key}>
      <button
        type="button"
        class="session"
        aria-current={selected === row.key ? "true" : undefined}
        onClick={() => props.onSelect(row.key)}
      >
        <span class="name">{nameOf(row)}</span>
        <span class="badges">
          <span class={`tag kind-${node.kind}`}>{node.kind}</span>
          <span class="tag">{node.channel}</span>
          <span class="tag">agent {node.agentId}</span>
          {row.sendPolicy === "deny" && <span class="tag deny">sends denied</span>}
          {running.has(row.key) && <span class="tag live">running</span>}
        </span>
        <span class="muted small">{ago(row.updatedAt)}</span>
      </button>
      {node.children.length > 0 && (
        <ul aria-label={`spawned by ${nameOf(row)}`}>
          {node.children.map((child) => (
            <Node key={child.row.key} {...props} node={child} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** The sessions as a tree by `spawnedBy`, live, with filters by kind, channel, agent, activity and label. */
export function SessionsTree(props: {
  model: ConsoleModel;
  selected: string | undefined;
  onSelect: (key: string) => void;
}) {
  const { model } = props;
  const sessions = useStore(model.sessions);
  const note = useStore(model.sessionsError);
  const runs = useStore(model.runs);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const running = useMemo(
    () =>
      new Set(runs.filter((r) => r.state === "running" && r.sessionKey).map((r) => r.sessionKey as string)),
    [runs],
  );
  const tree = useMemo(() => buildTree(sessions, filters, Date.now(), running), [sessions, filters, running]);
  const set = (field: keyof Filters) => (value: string) => setFilters((f) => ({ ...f, [field]: value }));
  const shown = countNodes(tree);
  return (
    <section class="tree-pane" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <form class="filters" aria-label="Filter sessions" onSubmit={(e) => e.preventDefault()}>
        <div class="field grow">
          <label for="filter-search">Search labels and keys</label>
          <input
            id="filter-search"
            type="search"
            value={filters.search}
            onInput={(e) => set("search")(e.currentTarget.value)}
          />
        </div>
        <Select
          id="filter-kind"
          label="Kind"
          value={filters.kind}
          options={[["", "any"], ...KINDS]}
          onChange={set("kind")}
        />
        <Select
          id="filter-channel"
          label="Channel"
          value={filters.channel}
          options={[["", "any"], ...distinct(sessions, (s) => s.channel)]}
          onChange={set("channel")}
        />
        <Select
          id="filter-agent"
          label="Agent"
          value={filters.agent}
          options={[["", "any"], ...distinct(sessions, (s) => s.agentId)]}
          onChange={set("agent")}
        />
        <Select
          id="filter-activity"
          label="Activity"
          value={filters.activity}
          options={[
            ["any", "any"],
            ["running", "running now"],
            ["5m", "last 5 minutes"],
            ["1h", "last hour"],
            ["24h", "last day"],
          ]}
          onChange={set("activity")}
        />
      </form>
      <p class="muted small" aria-live="polite">
        {shown} of {sessions.length} sessions{note ? ` · ${note}` : ""}
      </p>
      <ul class="tree" aria-label="Sessions tree">
        {tree.map((node) => (
          <Node
            key={node.row.key}
            node={node}
            selected={props.selected}
            running={running}
            onSelect={props.onSelect}
          />
        ))}
      </ul>
    </section>
  );
}
