/**
 * The documented maximum of every string and array parameter of the wire methods (`METHOD_PARAMS`,
 * `ConnectParamsSchema`) and the session tools (`sessionTools`). Strings are counted in UTF-16 code units
 * (`string.length`) unless the name says bytes; arrays in items. Over a maximum → `SessionsError`
 * `invalid_params` naming the field.
 */
export const LIMITS = {
  /** Session keys: `key`, `sessionKey`, `requesterKey`, `spawnedBy`, `sourceSessionKey`, a tool's `sessionKey`. */
  key: 1024,
  /** `idempotencyKey` of `chat.send` and `agent`. */
  idempotencyKey: 256,
  /** Ids and short names: runId, agentId, sessionId, accountId, threadId, channel, lane, model, thinking levels, tool names. */
  id: 256,
  /** A delivery target (`to`): a chat, channel or user address on its channel. */
  target: 1024,
  /** `message` of `chat.send` and `agent` (the same bound as inbound channel text). */
  message: 256 * 1024,
  /** `message` of `sessions_send` and `task` of `sessions_spawn`, in UTF-8 bytes. */
  toolMessageBytes: 64 * 1024,
  /** `extraSystemPrompt` of `agent`. */
  extraSystemPrompt: 64 * 1024,
  /** Session labels, set or filtered on. */
  label: 200,
  /** Items in `labels` of a `sessions_send` broadcast. */
  labels: 32,
  /** The free-text `search` filter of `sessions.list`, and the `query` of `sessions.search` and `sessions_list`. */
  search: 200,
  /** Items in `keys` or `runIds` of one `sessions.subscribe` / `sessions.unsubscribe` call. */
  subscriptions: 256,
  /** A `cursor` of `chat.history` or `sessions.list`: the `nextCursor` a page gave, passed back unchanged. */
  cursor: 32 * 1024,
  /** Items in a `kinds` filter (six kinds exist; duplicates are tolerated up to this). */
  kinds: 16,
  /** Items in `connect` `scopes`. */
  scopes: 16,
  /** Characters in one scope. */
  scope: 64,
  /** Items in `connect` `caps`. */
  caps: 64,
  /** `connect` `client.id`, `client.version`, `client.platform`, `client.mode` and `role`. */
  clientField: 128,
  /** `connect` `client.displayName`. */
  displayName: 200,
  /** `connect` `auth.token`. */
  token: 8192,
} as const;

/** The name of one entry of `LIMITS`. */
export type LimitName = keyof typeof LIMITS;
