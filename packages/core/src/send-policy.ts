import { normalizeChannelId } from "./channels.js";
import { normalizeChoice } from "./choice.js";
import type { DeliveryContext } from "./delivery.js";
import { type ChatType, parseSessionKey } from "./keys.js";

/** What the send policy decides for a delivery. */
export type SendDecision = "allow" | "deny";

const DECISIONS = ["allow", "deny"] as const;

/** `"allow"` / `"deny"` as configured, trimmed and case-insensitive; `undefined` for anything else. */
function decisionOf(value: unknown): SendDecision | undefined {
  return normalizeChoice(value, DECISIONS);
}

/** What a send-policy rule matches on; fields left out match anything; all case-insensitive. */
export interface SendPolicyMatch {
  channel?: string | undefined;
  chatType?: string | undefined;
  keyPrefix?: string | undefined;
  rawKeyPrefix?: string | undefined;
}

/** One send-policy rule: when `match` fits, `action`. */
export interface SendPolicyRule {
  match?: SendPolicyMatch | undefined;
  action: SendDecision;
}

/** `session.sendPolicy`: rules (any matching `deny` wins, then `allow`) and the default. */
export interface SendPolicyConfig {
  rules?: readonly SendPolicyRule[] | undefined;
  default?: SendDecision | undefined;
}

/** The entry fields the send policy reads. */
export interface SendPolicyEntry {
  sendPolicy?: SendDecision | null | undefined;
  channel?: string | undefined;
  chatType?: string | undefined;
  lastChannel?: string | undefined;
  deliveryContext?: DeliveryContext | undefined;
}

/** The question `resolveSendPolicy` answers: may the gateway post into this session? */
export interface SendPolicyInput {
  policy?: SendPolicyConfig | undefined;
  entry?: SendPolicyEntry | undefined;
  key: string;
  channel?: string | undefined;
  chatType?: string | undefined;
}

/** The decision and what made it: the session's override, a rule (by index), or the default. */
export interface SendPolicyExplanation {
  decision: SendDecision;
  source: "override" | "rule" | "default";
  ruleIndex?: number | undefined;
}

interface CompiledRule {
  index: number;
  /** A present but unusable match field: the rule can never match. */
  never: boolean;
  deny: boolean;
  channel: string | undefined;
  chatType: string | undefined;
  keyPrefix: string | undefined;
  rawKeyPrefix: string | undefined;
}

interface CompiledPolicy {
  rules: CompiledRule[];
  fallback: SendDecision;
  /** What the policy object looked like when compiled; a mismatch means it was changed in place. */
  source: { rules: unknown; length: number; fallback: unknown };
}

function lowerOrUndefined(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const t = value.trim().toLowerCase();
  return t === "" ? undefined : t;
}

function normalizeChatType(value: unknown): string | undefined {
  const t = lowerOrUndefined(value);
  return t === "dm" ? "direct" : t;
}

const EMPTY_POLICY: CompiledPolicy = {
  rules: [],
  fallback: "allow",
  source: { rules: undefined, length: -1, fallback: undefined },
};
const compiledCache = new WeakMap<object, CompiledPolicy>();

function compileMatchField(
  value: unknown,
  normalize: (v: unknown) => string | undefined,
): string | null | undefined {
  if (value === undefined) return undefined;
  return normalize(value) ?? null;
}

function compile(policy: SendPolicyConfig | undefined): CompiledPolicy {
  if (policy === null || typeof policy !== "object") return EMPTY_POLICY;
  const source = Array.isArray(policy.rules) ? policy.rules : [];
  const cached = compiledCache.get(policy);
  if (
    cached !== undefined &&
    cached.source.rules === policy.rules &&
    cached.source.length === source.length &&
    cached.source.fallback === policy.default
  ) {
    return cached;
  }
  const rules: CompiledRule[] = [];
  source.forEach((rule: SendPolicyRule | undefined, index: number) => {
    if (rule === null || typeof rule !== "object") return;
    const action = decisionOf(rule.action);
    if (action === undefined) return;
    const match: Record<string, unknown> =
      rule.match !== null && typeof rule.match === "object" ? (rule.match as Record<string, unknown>) : {};
    const fields = {
      channel: compileMatchField(match.channel, (v) => normalizeChannelId(v)),
      chatType: compileMatchField(match.chatType, normalizeChatType),
      keyPrefix: compileMatchField(match.keyPrefix, lowerOrUndefined),
      rawKeyPrefix: compileMatchField(match.rawKeyPrefix, lowerOrUndefined),
    };
    rules.push({
      index,
      deny: action === "deny",
      never: Object.values(fields).some((f) => f === null),
      channel: fields.channel ?? undefined,
      chatType: fields.chatType ?? undefined,
      keyPrefix: fields.keyPrefix ?? undefined,
      rawKeyPrefix: fields.rawKeyPrefix ?? undefined,
    });
  });
  const compiled: CompiledPolicy = {
    rules,
    fallback: decisionOf(policy.default) ?? "allow",
    source: { rules: policy.rules, length: source.length, fallback: policy.default },
  };
  compiledCache.set(policy, compiled);
  return compiled;
}

/** Which override, rule or default decides a send (SPEC 8.2). Never throws. */
export function explainSendPolicy(input: SendPolicyInput): SendPolicyExplanation {
  const entry = input?.entry;
  const override = decisionOf(entry?.sendPolicy);
  if (override !== undefined) return { decision: override, source: "override" };

  const policy = compile(input?.policy);
  if (policy.rules.length === 0) return { decision: policy.fallback, source: "default" };

  const parsed = parseSessionKey(input.key);
  // Prefixes are tried on the key as given and as normalised (`dm` → `direct`), so either spelling matches.
  const givenKey = typeof input.key === "string" ? input.key.trim().toLowerCase() : "";
  const fullKey = parsed?.key.toLowerCase() ?? givenKey;
  const bareKey = parsed?.rest.toLowerCase() ?? givenKey;
  const givenBare = parsed?.agentId === undefined ? givenKey : givenKey.split(":").slice(2).join(":");
  const channel =
    normalizeChannelId(input.channel) ??
    normalizeChannelId(entry?.channel) ??
    normalizeChannelId(entry?.deliveryContext?.channel) ??
    normalizeChannelId(entry?.lastChannel) ??
    parsed?.channel;
  const keyChatType: ChatType | undefined =
    parsed === null || parsed.chatType === "unknown" ? undefined : parsed.chatType;
  const chatType = normalizeChatType(input.chatType) ?? normalizeChatType(entry?.chatType) ?? keyChatType;

  let allowAt = -1;
  for (const rule of policy.rules) {
    if (rule.never) continue;
    if (rule.channel !== undefined && rule.channel !== channel) continue;
    if (rule.chatType !== undefined && rule.chatType !== chatType) continue;
    const prefix = rule.keyPrefix;
    if (
      prefix !== undefined &&
      !fullKey.startsWith(prefix) &&
      !bareKey.startsWith(prefix) &&
      !givenKey.startsWith(prefix) &&
      !givenBare.startsWith(prefix)
    )
      continue;
    const raw = rule.rawKeyPrefix;
    if (raw !== undefined && !fullKey.startsWith(raw) && !givenKey.startsWith(raw)) continue;
    if (rule.deny) return { decision: "deny", source: "rule", ruleIndex: rule.index };
    if (allowAt === -1) allowAt = rule.index;
  }
  if (allowAt !== -1) return { decision: "allow", source: "rule", ruleIndex: allowAt };
  return { decision: policy.fallback, source: "default" };
}

/** `"allow"` or `"deny"` for a send to `key` (SPEC 8.2): override, then any deny, then any allow, then default. */
export function resolveSendPolicy(input: SendPolicyInput): SendDecision {
  return explainSendPolicy(input).decision;
}

/** A one-line reason for logs and `suppressed` receipts, naming the setting that decided. */
export function describeSendPolicyDecision(explanation: SendPolicyExplanation): string {
  if (explanation.source === "override") {
    return `session sendPolicy override is "${explanation.decision}" (change it with sessions.patch or /send)`;
  }
  if (explanation.source === "rule") {
    return `session.sendPolicy.rules[${explanation.ruleIndex}] says "${explanation.decision}"`;
  }
  return `session.sendPolicy.default is "${explanation.decision}"`;
}

/** A parsed `/send on|off|inherit`; `mode: null` means the command was malformed (show usage). */
export type SendCommand = { mode: SendDecision | "inherit" | null };

const SEND_MODES: ReadonlyMap<string, SendDecision | "inherit"> = new Map([
  ["on", "allow"],
  ["allow", "allow"],
  ["off", "deny"],
  ["deny", "deny"],
  ["inherit", "inherit"],
  ["default", "inherit"],
  ["reset", "inherit"],
]);

/**
 * Parses the owner-only standalone message `/send on|off|inherit` (also `/send@bot on`).
 * `null` → not a send command; `{ mode: null }` → a send command without a valid mode (show usage).
 */
export function parseSendCommand(text: unknown): SendCommand | null {
  if (typeof text !== "string") return null;
  const trimmed = text.trim();
  const match = /^\/send(?:@[\w.-]+)?(?:\s+([\s\S]*))?$/i.exec(trimmed);
  if (match === null) return null;
  const arg = (match[1] ?? "").trim().toLowerCase();
  return { mode: SEND_MODES.get(arg) ?? null };
}
