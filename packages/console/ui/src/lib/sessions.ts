import { channelOf, type GatewayRow, parseSessionKey, type SessionKind, sessionKindOf } from "@sessions/core";

/** A `sessions.list` row with what the console derives from its key (SPEC 1.3): coarse kind, agent, channel. */
export interface SessionInfo {
  row: GatewayRow;
  kind: SessionKind;
  agentId: string;
  channel: string;
}

export interface SessionNode extends SessionInfo {
  children: SessionNode[];
  /** False for an ancestor shown only because a descendant matches the filters. */
  match: boolean;
}

export interface Filters {
  kind: string;
  channel: string;
  agent: string;
  /** `any`, `running` (a run under way), or updated within `5m`, `1h`, `24h`. */
  activity: string;
  search: string;
}

export const NO_FILTERS: Filters = { kind: "", channel: "", agent: "", activity: "any", search: "" };

const WINDOWS: Readonly<Record<string, number>> = { "5m": 5 * 60_000, "1h": 3_600_000, "24h": 86_400_000 };

export function describeRow(row: GatewayRow, mainKey?: string): SessionInfo {
  const chatType =
    row.chatType === "direct" || row.chatType === "group" || row.chatType === "channel"
      ? row.chatType
      : undefined;
  const kind = sessionKindOf(row.key, { ...(mainKey ? { mainKey } : {}), ...(chatType ? { chatType } : {}) });
  const agentId = parseSessionKey(row.key)?.agentId ?? "main";
  const channel = channelOf({
    key: row.key,
    kind,
    ...(row.channel ? { channel: row.channel } : {}),
    ...(row.lastChannel ? { lastChannel: row.lastChannel } : {}),
    ...(row.deliveryContext ? { deliveryContext: row.deliveryContext } : {}),
  });
  return { row, kind, agentId, channel };
}

function matches(info: SessionInfo, filters: Filters, now: number, running: ReadonlySet<string>): boolean {
  if (filters.kind && info.kind !== filters.kind) return false;
  if (filters.channel && info.channel !== filters.channel) return false;
  if (filters.agent && info.agentId !== filters.agent) return false;
  if (filters.activity === "running" && !running.has(info.row.key)) return false;
  const window = WINDOWS[filters.activity];
  if (window !== undefined && now - info.row.updatedAt > window) return false;
  const search = filters.search.trim().toLowerCase();
  if (search) {
    const haystack = [info.row.label, info.row.displayName, info.row.key]
      .filter(Boolean)
      .join(" ")
      .toLowerCase();
    if (!haystack.includes(search)) return false;
  }
  return true;
}

/**
 * The sessions as a forest by `spawnedBy` (a child whose parent is not listed is a root), newest first, keeping
 * only rows that match the filters and their ancestors.
 */
export function buildTree(
  infos: readonly SessionInfo[],
  filters: Filters,
  now: number,
  running: ReadonlySet<string> = new Set(),
): SessionNode[] {
  const nodes = new Map<string, SessionNode>();
  for (const info of infos)
    nodes.set(info.row.key, { ...info, children: [], match: matches(info, filters, now, running) });
  const roots: SessionNode[] = [];
  for (const node of nodes.values()) {
    const parentKey = node.row.spawnedBy;
    const parent = parentKey === undefined || parentKey === node.row.key ? undefined : nodes.get(parentKey);
    if (parent !== undefined && !createsCycle(nodes, node.row.key, parentKey as string))
      parent.children.push(node);
    else roots.push(node);
  }
  const prune = (list: SessionNode[]): SessionNode[] =>
    list
      .map((n) => ({ ...n, children: prune(n.children) }))
      .filter((n) => n.match || n.children.length > 0)
      .sort((a, b) => b.row.updatedAt - a.row.updatedAt);
  return prune(roots);
}

/** Whether following `spawnedBy` up from `parentKey` comes back to `key` (a corrupt cycle must not hide rows). */
function createsCycle(nodes: ReadonlyMap<string, SessionNode>, key: string, parentKey: string): boolean {
  const seen = new Set<string>();
  let current: string | undefined = parentKey;
  while (current !== undefined && !seen.has(current)) {
    if (current === key) return true;
    seen.add(current);
    current = nodes.get(current)?.row.spawnedBy;
  }
  return false;
}

export function countNodes(nodes: readonly SessionNode[]): number {
  return nodes.reduce((n, node) => n + 1 + countNodes(node.children), 0);
}

export function distinct(infos: readonly SessionInfo[], pick: (info: SessionInfo) => string): string[] {
  return [...new Set(infos.map(pick))].sort();
}
